// The guest library's /dev/vgpu client against a fake device: what it asks
// of the kernel module (vgpu_dev.h) and how it reads the answers.
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "vgpu/protocol/codec.h"
#include "vgpu/protocol/vm_region.h"
#include "vgpu/transport/device_client.h"
#include "vgpu/transport/vgpu_dev.h"

using namespace vgpu;
using namespace vgpu::transport;
using namespace std::chrono_literals;

namespace {

// Plays the kernel module: checks submissions as it does, stamps the client,
// and queues an echo of each request as the reply.
struct FakeDevice : DeviceFile {
  vgpu_dev_info info{VGPU_DEV_ABI_VERSION, VGPU_VM_CLIENT(1, 4), 1u << 20, VGPU_MSG_MAX_SIZE,
                     VGPU_DEV_INFO_INTERRUPTS | VGPU_DEV_INFO_RECEIVE_SPIN, {}};
  std::vector<uint8_t> slot = std::vector<uint8_t>(1u << 20);
  std::deque<std::vector<uint8_t>> replies;
  std::deque<int> submit_errors, receive_errors;  // returned before doing anything
  int submits = 0, receives = 0, plain_receives = 0;
  std::vector<uint32_t> spins;  // spin_us of each VGPU_IOC_RECEIVE_SPIN
  std::vector<uint32_t> submit_flags;  // flags of each submission that got through
  size_t ring_room = SIZE_MAX;  // requests the "ring" takes before it is full
  int32_t last_timeout = 0;
  bool* unmapped = nullptr;

  int ioctl(unsigned long request, void* arg) override {
    if (request == VGPU_IOC_INFO) {
      std::memcpy(arg, &info, sizeof info);
      return 0;
    }
    if (request == VGPU_IOC_SUBMIT) {
      submits++;
      if (!submit_errors.empty()) {
        const int e = submit_errors.front();
        submit_errors.pop_front();
        return e;
      }
      auto* s = static_cast<vgpu_dev_submit*>(arg);
      const uint32_t known = (info.flags & VGPU_DEV_INFO_SUBMIT_NOWAIT) ? VGPU_DEV_SUBMIT_NOWAIT : 0;
      if ((s->flags & ~known) || s->len < VGPU_MSG_HEADER_SIZE || s->len > VGPU_MSG_MAX_SIZE) return -EINVAL;
      std::vector<uint8_t> m(reinterpret_cast<const uint8_t*>(s->msg),
                             reinterpret_cast<const uint8_t*>(s->msg) + s->len);
      vgpu_msg_header h;
      std::memcpy(&h, m.data(), sizeof h);
      if (h.client != 0 || h.payload_len != s->len - VGPU_MSG_HEADER_SIZE) return -EINVAL;
      submit_flags.push_back(s->flags);
      if (ring_room == 0) {
        // The module would wait; this fake cannot, so a waiting submit is a bug here.
        return (s->flags & VGPU_DEV_SUBMIT_NOWAIT) ? -EAGAIN : -EDEADLK;
      }
      ring_room--;
      h.client = info.client;
      h.flags = VGPU_MSG_REPLY;
      std::memcpy(m.data(), &h, sizeof h);
      replies.push_back(std::move(m));
      return 0;
    }
    if (request == VGPU_IOC_RECEIVE_SPIN) {
      if (!(info.flags & VGPU_DEV_INFO_RECEIVE_SPIN)) return -ENOTTY;  // an older module
      auto* s = static_cast<vgpu_dev_receive_spin*>(arg);
      if (s->spin_us > VGPU_DEV_MAX_SPIN_US || s->reserved) return -EINVAL;
      spins.push_back(s->spin_us);
      return receive(&s->receive);
    }
    if (request == VGPU_IOC_RECEIVE) {
      plain_receives++;
      return receive(static_cast<vgpu_dev_receive*>(arg));
    }
    return -ENOTTY;
  }
  int receive(vgpu_dev_receive* r) {
    {
      receives++;
      last_timeout = r->timeout_ms;
      if (!receive_errors.empty()) {
        const int e = receive_errors.front();
        receive_errors.pop_front();
        return e;
      }
      if (replies.empty()) return r->timeout_ms == 0 ? -EAGAIN : -ETIMEDOUT;
      const auto& m = replies.front();
      r->len = static_cast<uint32_t>(m.size());
      if (m.size() > r->cap) return -EMSGSIZE;
      std::memcpy(reinterpret_cast<void*>(r->buf), m.data(), m.size());
      replies.pop_front();
      return 0;
    }
  }
  int map(size_t size, void** addr) override {
    if (size != slot.size()) return -EINVAL;
    *addr = slot.data();
    return 0;
  }
  void unmap(void*, size_t) override {
    if (unmapped) *unmapped = true;
  }
};

std::vector<uint8_t> request(uint64_t id, uint32_t payload) {
  std::vector<uint8_t> m(VGPU_MSG_HEADER_SIZE + payload, 0xab);
  const auto h = proto::make_header(static_cast<uint16_t>(proto::Op::Malloc), id, 0, payload, 0);
  std::memcpy(m.data(), &h, sizeof h);
  return m;
}

Status send(GuestTransport& t, const std::vector<uint8_t>& m, bool may_wait = true) {
  // In two parts, as the library sends header and tail.
  const std::span<const uint8_t> parts[2] = {{m.data(), VGPU_MSG_HEADER_SIZE},
                                             {m.data() + VGPU_MSG_HEADER_SIZE,
                                              m.size() - VGPU_MSG_HEADER_SIZE}};
  return may_wait ? t.send(parts) : t.try_send(parts);
}

}  // namespace

TEST_CASE("the /dev/vgpu client sends whole requests and reads this process's replies") {
  auto dev = std::make_unique<FakeDevice>();
  FakeDevice* fake = dev.get();
  bool unmapped = false;
  fake->unmapped = &unmapped;
  std::unique_ptr<GuestTransport> t;
  std::string why;
  REQUIRE(DeviceClient::attach(std::move(dev), &t, &why) == Status::kSuccess);
  CHECK(t->data().size() == fake->slot.size());
  CHECK(t->data().data() == fake->slot.data());  // the mapped slot itself: no copy

  REQUIRE(send(*t, request(9, 24)) == Status::kSuccess);
  std::vector<uint8_t> reply;
  REQUIRE(t->receive(&reply, 1000ms) == Status::kSuccess);
  CHECK(fake->last_timeout == 1000);
  REQUIRE(reply.size() == VGPU_MSG_HEADER_SIZE + 24);
  vgpu_msg_header h;
  std::memcpy(&h, reply.data(), sizeof h);
  CHECK(h.request_id == 9);
  CHECK(h.client == fake->info.client);  // stamped by the "module", not by us

  SECTION("no reply in time is kNotReady, and a signal too (the caller retries)") {
    CHECK(t->receive(&reply, 5ms) == Status::kNotReady);
    fake->receive_errors.push_back(-EINTR);
    CHECK(t->receive(&reply, 5ms) == Status::kNotReady);
    CHECK_FALSE(t->daemon_gone());
  }
  SECTION("a signal during a submit retries it: nothing was written") {
    fake->submit_errors.push_back(-EINTR);
    fake->submit_errors.push_back(-EINTR);
    CHECK(send(*t, request(10, 8)) == Status::kSuccess);
    CHECK(fake->submits == 4);
    CHECK(fake->replies.size() == 1);
  }
  SECTION("a message over the maximum never reaches the device") {
    CHECK(send(*t, request(11, VGPU_MSG_MAX_PAYLOAD + 8)) == Status::kInvalidValue);
    CHECK(fake->submits == 1);
  }
  SECTION("the host gone (EPIPE) or silent (EHOSTDOWN), the device gone (ENODEV), replies lost "
          "(EIO): unavailable") {
    const int err = GENERATE(-EPIPE, -EHOSTDOWN, -ENODEV, -EIO);
    fake->receive_errors.push_back(err);
    CHECK(t->receive(&reply, 5ms) == Status::kDevicesUnavailable);
    CHECK(t->daemon_gone());
    CHECK(send(*t, request(12, 8)) == Status::kDevicesUnavailable);
    CHECK(fake->submits == 1);  // not even tried
  }
  SECTION("a refused request is an invalid value, and the channel lives on") {
    fake->submit_errors.push_back(-EINVAL);
    CHECK(send(*t, request(13, 8)) == Status::kInvalidValue);
    CHECK_FALSE(t->daemon_gone());
  }
  t.reset();
  CHECK(unmapped);
}

// A process that queues more work than the VM's reply ring holds answers for
// must take replies while the request ring is full (the host reads no more of
// its requests until it does): try_send may not wait inside the module.
TEST_CASE("the /dev/vgpu client's try_send does not wait for room, where the module can say so") {
  auto dev = std::make_unique<FakeDevice>();
  FakeDevice* fake = dev.get();
  fake->info.flags |= VGPU_DEV_INFO_SUBMIT_NOWAIT;
  std::unique_ptr<GuestTransport> t;
  std::string why;
  REQUIRE(DeviceClient::attach(std::move(dev), &t, &why) == Status::kSuccess);
  CHECK(static_cast<DeviceClient&>(*t).submits_nowait());
  fake->ring_room = 1;
  REQUIRE(send(*t, request(1, 8), false) == Status::kSuccess);
  CHECK(send(*t, request(2, 8), false) == Status::kNotReady);  // full: nothing written
  CHECK(fake->replies.size() == 1);
  CHECK_FALSE(t->daemon_gone());
  std::vector<uint8_t> reply;
  REQUIRE(t->receive(&reply, 0ms) == Status::kSuccess);  // what the caller does next
  fake->ring_room = 1;
  REQUIRE(send(*t, request(2, 8), false) == Status::kSuccess);
  CHECK(fake->submit_flags == std::vector<uint32_t>{VGPU_DEV_SUBMIT_NOWAIT, VGPU_DEV_SUBMIT_NOWAIT,
                                                    VGPU_DEV_SUBMIT_NOWAIT});
  SECTION("send() still asks the module to wait") {
    fake->ring_room = 1;
    REQUIRE(send(*t, request(3, 8)) == Status::kSuccess);
    CHECK(fake->submit_flags.back() == 0u);
  }
  SECTION("an older module (no NOWAIT) is never sent the flag") {
    auto old = std::make_unique<FakeDevice>();
    FakeDevice* old_fake = old.get();
    std::unique_ptr<GuestTransport> o;
    REQUIRE(DeviceClient::attach(std::move(old), &o, &why) == Status::kSuccess);
    CHECK_FALSE(static_cast<DeviceClient&>(*o).submits_nowait());
    REQUIRE(send(*o, request(4, 8), false) == Status::kSuccess);
    CHECK(old_fake->submit_flags == std::vector<uint32_t>{0u});
  }
}

TEST_CASE("the /dev/vgpu client tells the module how long to poll, where it can") {
  auto dev = std::make_unique<FakeDevice>();
  FakeDevice* fake = dev.get();
  const bool spin = GENERATE(true, false);  // a module with VGPU_IOC_RECEIVE_SPIN, or older
  if (!spin) fake->info.flags = VGPU_DEV_INFO_INTERRUPTS;
  std::unique_ptr<GuestTransport> t;
  std::string why;
  REQUIRE(DeviceClient::attach(std::move(dev), &t, &why) == Status::kSuccess);
  std::vector<uint8_t> reply;
  for (const auto poll : {0us, 50us, 700us, 5000us}) {
    t->set_poll(poll);
    REQUIRE(send(*t, request(20, 8)) == Status::kSuccess);
    REQUIRE(t->receive(&reply, 1000ms) == Status::kSuccess);
    CHECK(reply.size() == VGPU_MSG_HEADER_SIZE + 8);
    CHECK(fake->last_timeout == 1000);
  }
  if (spin) {
    CHECK(fake->spins == std::vector<uint32_t>{0, 50, 700, VGPU_DEV_MAX_SPIN_US});  // capped
    CHECK(fake->plain_receives == 0);
  } else {
    CHECK(fake->spins.empty());  // never the ioctl an older module lacks
    CHECK(fake->plain_receives == 4);
  }
}

TEST_CASE("the /dev/vgpu client refuses a module it does not match") {
  auto dev = std::make_unique<FakeDevice>();
  std::string why;
  std::unique_ptr<GuestTransport> t;
  SECTION("another ABI version") {
    dev->info.abi_version = 2;
    CHECK(DeviceClient::attach(std::move(dev), &t, &why) == Status::kInsufficientDriver);
    CHECK_THAT(why, Catch::Contains("ABI 2"));
  }
  SECTION("an unusable slot") {
    dev->info.slot_size = 1000;
    CHECK(DeviceClient::attach(std::move(dev), &t, &why) == Status::kNoDevice);
  }
  CHECK(t == nullptr);
}

TEST_CASE("the library looks for /dev/vgpu, a character device") {
  CHECK(DeviceClient::present("/dev/null"));
  CHECK_FALSE(DeviceClient::present("/nonexistent/vgpu"));
  const std::string file = "/tmp/vgpu-device-client-test-" + std::to_string(getpid());
  std::ofstream(file) << "x";
  CHECK_FALSE(DeviceClient::present(file));
  std::filesystem::remove(file);
  std::unique_ptr<GuestTransport> t;
  std::string why;
  CHECK(DeviceClient::open("/nonexistent/vgpu", &t, &why) == Status::kNoDevice);
  CHECK_THAT(why, Catch::Contains("cannot open /nonexistent/vgpu"));
}
