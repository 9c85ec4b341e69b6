// The host loop and a guest channel talking over a real hand-over socket.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "vgpu/protocol/codec.h"
#include "vgpu/transport/guest_channel.h"
#include "vgpu/transport/host_loop.h"

using namespace vgpu;
using namespace vgpu::transport;
using namespace std::chrono_literals;

namespace {

// Whether a thread of this process has the name `name` (/proc/self/task/*/comm).
bool thread_named(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::FILE* f = std::fopen((task.path() / "comm").c_str(), "r");
    if (!f) continue;  // the thread ended meanwhile
    char comm[32] = {};
    const bool read = std::fgets(comm, sizeof comm, f) != nullptr;
    std::fclose(f);
    if (read && std::string(comm) == name + "\n") return true;
  }
  return false;
}

// Answers every request with a reply carrying the same request id and payload.
struct EchoEvents : ChannelEvents {
  HostLoop* loop = nullptr;
  std::mutex mu;
  std::vector<std::string> opened;
  std::atomic<int> closed{0};
  std::atomic<bool> accept{true};
  std::atomic<uint64_t> last_channel{0};
  // Requests per burst (loop thread only while it runs).
  int in_burst = 0;
  std::vector<int> bursts;
  // The last channel's data area, and (when keep_mapping) what on_close was
  // given to keep it mapped.
  std::span<uint8_t> data_area;
  bool keep_mapping = false;
  std::shared_ptr<const void> kept;
  Status on_open(uint64_t channel, const std::string& vm, const PeerCredentials&,
                 std::span<uint8_t> area, std::string* why) override {
    if (vm == "refused") {
      *why = "not on the class list";
      return Status::kNotPermitted;
    }
    std::lock_guard lock(mu);
    opened.push_back(vm);
    data_area = area;
    last_channel = channel;
    return Status::kSuccess;
  }
  void on_request(uint64_t channel, std::span<const uint8_t> m) override {
    vgpu_msg_header h;
    std::memcpy(&h, m.data(), sizeof h);
    h.flags = VGPU_MSG_REPLY;
    const std::span<const uint8_t> parts[2] = {
        {reinterpret_cast<const uint8_t*>(&h), sizeof h}, m.subspan(sizeof h)};
    loop->reply(channel, parts);
    ++in_burst;
  }
  void on_burst_end(uint64_t) override {
    std::lock_guard lock(mu);
    bursts.push_back(in_burst);
    in_burst = 0;
    ++bursts_this_pass;
  }
  // Bursts in each pass that read any (loop thread only while it runs).
  int bursts_this_pass = 0;
  std::vector<int> passes;
  void on_pass_end() override {
    std::lock_guard lock(mu);
    passes.push_back(bursts_this_pass);
    bursts_this_pass = 0;
  }
  bool accepting(uint64_t) override { return accept; }
  void on_close(uint64_t, std::shared_ptr<const void> mapping) override {
    if (keep_mapping) {
      std::lock_guard lock(mu);
      kept = std::move(mapping);
    }
    closed++;
  }
};

// How many mappings of channel regions this process has.
int region_mappings() {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps) return -1;
  int n = 0;
  char line[512];
  while (std::fgets(line, sizeof line, maps)) n += std::strstr(line, "vgpu-region") != nullptr;
  std::fclose(maps);
  return n;
}

std::string temp_socket() {
  static std::atomic<int> n{0};
  return "/tmp/vgpu-loop-test-" + std::to_string(getpid()) + "-" + std::to_string(n++) + ".sock";
}

std::vector<uint8_t> request(uint64_t id, uint32_t len) {
  std::vector<uint8_t> m(VGPU_MSG_HEADER_SIZE + len, static_cast<uint8_t>(id));
  auto h = proto::make_header(static_cast<uint16_t>(proto::Op::Malloc), id, 0, len, 0);
  std::memcpy(m.data(), &h, sizeof h);
  return m;
}

Status send(GuestChannel& ch, const std::vector<uint8_t>& m) {
  std::span<const uint8_t> part(m);
  return ch.send({&part, 1});
}

struct Fixture {
  EchoEvents events;
  std::string path = temp_socket();
  RegionGeometry geometry{1u << 17, 1u << 20};
  HostLoop loop{path, geometry, &events};
  Fixture() {
    events.loop = &loop;
    REQUIRE(loop.start().ok());
  }
};

template <class F>
bool eventually(F f, std::chrono::milliseconds limit = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return f();
}

}  // namespace

TEST_CASE("a guest gets its region over the hand-over socket and round-trips messages") {
  Fixture f;
  std::unique_ptr<GuestChannel> guest;
  std::string why;
  REQUIRE(GuestChannel::connect(f.path, "alice", &guest, &why) == Status::kSuccess);
  CHECK(guest->data().size() == f.geometry.data_size);
  std::vector<uint8_t> reply;
  for (uint64_t i = 1; i <= 2000; ++i) {
    REQUIRE(send(*guest, request(i, static_cast<uint32_t>(i % 100))) == Status::kSuccess);
    REQUIRE(guest->receive(&reply, 5000ms) == Status::kSuccess);
    vgpu_msg_header h;
    std::memcpy(&h, reply.data(), sizeof h);
    CHECK(h.request_id == i);
    CHECK(h.flags == VGPU_MSG_REPLY);
  }
  std::lock_guard lock(f.events.mu);
  CHECK(f.events.opened == std::vector<std::string>{"alice"});
}

TEST_CASE("an idle host sleeps and a request wakes it") {
  Fixture f;
  std::unique_ptr<GuestChannel> guest;
  std::string why;
  REQUIRE(GuestChannel::connect(f.path, "alice", &guest, &why) == Status::kSuccess);
  std::vector<uint8_t> reply;
  for (int i = 0; i < 5; ++i) {
    const uint64_t sleeps = f.loop.stats().sleeps;
    REQUIRE(eventually([&] { return f.loop.stats().sleeps > sleeps; }));
    std::this_thread::sleep_for(5ms);
    REQUIRE(send(*guest, request(static_cast<uint64_t>(i + 1), 8)) == Status::kSuccess);
    REQUIRE(guest->receive(&reply, 5000ms) == Status::kSuccess);
  }
}

TEST_CASE("the loop's heartbeat moves while it runs: idle, held back, or serving") {
  Fixture f;
  std::unique_ptr<GuestChannel> guest;
  std::string why;
  REQUIRE(GuestChannel::connect(f.path, "alice", &guest, &why) == Status::kSuccess);
  // Idle: the loop sleeps, but wakes at least once a second and beats.
  uint64_t seen = guest->host_heartbeat();
  CHECK(eventually([&] { return guest->host_heartbeat() != seen; }, 3000ms));
  // Held back (its requests stay in the ring): still alive, still beating.
  f.events.accept = false;
  REQUIRE(send(*guest, request(1, 8)) == Status::kSuccess);
  seen = guest->host_heartbeat();
  CHECK(eventually([&] { return guest->host_heartbeat() != seen; }, 3000ms));
  f.events.accept = true;
  f.loop.wake();
  std::vector<uint8_t> reply;
  REQUIRE(guest->receive(&reply, 5000ms) == Status::kSuccess);
  // Stopped: the loop's thread, the only one that beats, is gone.
  f.loop.stop();
  CHECK_FALSE(thread_named("vgpu-loop"));
}

TEST_CASE("the hand-over refuses bad names and refused VMs with a reason") {
  Fixture f;
  std::unique_ptr<GuestChannel> guest;
  std::string why;
  CHECK(GuestChannel::connect(f.path, "bad name!", &guest, &why) == Status::kInvalidValue);
  CHECK_THAT(why, Catch::Contains("VM names"));
  CHECK(GuestChannel::connect(f.path, "refused", &guest, &why) == Status::kNotPermitted);
  CHECK_THAT(why, Catch::Contains("not on the class list"));
  CHECK(GuestChannel::connect("/tmp/does-not-exist.sock", "alice", &guest, &why) ==
        Status::kNoDevice);
  CHECK_THAT(why, Catch::Contains("cannot reach vgpud"));
}

TEST_CASE("a client that goes away is closed and released") {
  Fixture f;
  {
    std::unique_ptr<GuestChannel> guest;
    std::string why;
    REQUIRE(GuestChannel::connect(f.path, "alice", &guest, &why) == Status::kSuccess);
    REQUIRE(eventually([&] { return f.loop.channel_count() == 1; }));
  }
  CHECK(eventually([&] { return f.events.closed == 1 && f.loop.channel_count() == 0; }));

  // The same from a process killed with SIGKILL.
  const pid_t pid = fork();
  if (pid == 0) {
    std::unique_ptr<GuestChannel> guest;
    std::string why;
    if (GuestChannel::connect(f.path, "bob", &guest, &why) != Status::kSuccess) _exit(1);
    pause();
    _exit(0);
  }
  REQUIRE(eventually([&] { return f.loop.channel_count() == 1; }));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  CHECK(eventually([&] { return f.events.closed == 2 && f.loop.channel_count() == 0; }));
}

TEST_CASE("a guest learns that the daemon went away instead of hanging") {
  auto f = std::make_unique<Fixture>();
  std::unique_ptr<GuestChannel> guest;
  std::string why;
  REQUIRE(GuestChannel::connect(f->path, "alice", &guest, &why) == Status::kSuccess);
  f->loop.stop();
  std::vector<uint8_t> reply;
  CHECK(guest->receive(&reply, 5000ms) == Status::kDevicesUnavailable);
  CHECK(send(*guest, request(1, 8)) == Status::kDevicesUnavailable);
}

TEST_CASE("back-pressure: a tenant that may not queue has its requests left in its ring") {
  Fixture f;
  f.events.accept = false;
  std::unique_ptr<GuestChannel> guest;
  std::string why;
  REQUIRE(GuestChannel::connect(f.path, "alice", &guest, &why) == Status::kSuccess);
  REQUIRE(send(*guest, request(1, 8)) == Status::kSuccess);
  std::vector<uint8_t> reply;
  CHECK(guest->receive(&reply, 100ms) == Status::kNotReady);
  f.events.accept = true;
  f.loop.wake();
  CHECK(guest->receive(&reply, 5000ms) == Status::kSuccess);
}

TEST_CASE("a guest whose ring is corrupted loses only its own channel") {
  Fixture f;
  std::unique_ptr<GuestChannel> good, bad;
  std::string why;
  REQUIRE(GuestChannel::connect(f.path, "good", &good, &why) == Status::kSuccess);
  REQUIRE(GuestChannel::connect(f.path, "bad", &bad, &why) == Status::kSuccess);
  REQUIRE(eventually([&] { return f.loop.channel_count() == 2; }));
  // Scribble over the bad guest's request ring and publish a nonsense head.
  std::memset(bad->data().data() - (1u << 17) * 2, 0x5a, 256);
  auto* h = reinterpret_cast<vgpu_region_header*>(bad->data().data() - (1u << 17) * 2 -
                                                  VGPU_REGION_HEADER_SIZE);
  std::atomic_ref<uint32_t>(h->req.head).store(24, std::memory_order_release);
  f.loop.wake();
  CHECK(eventually([&] { return f.events.closed == 1; }));
  CHECK(f.loop.stats().corrupt_rings == 1);
  std::vector<uint8_t> reply;
  REQUIRE(send(*good, request(5, 8)) == Status::kSuccess);
  CHECK(good->receive(&reply, 5000ms) == Status::kSuccess);
  CHECK(bad->receive(&reply, 2000ms) == Status::kDevicesUnavailable);
}

TEST_CASE("requests are handed on in bursts of at most kRequestsPerBurst, each one ended") {
  Fixture f;
  std::unique_ptr<GuestChannel> guest;
  std::string why;
  REQUIRE(GuestChannel::connect(f.path, "alice", &guest, &why) == Status::kSuccess);
  f.events.accept = false;  // let them pile up in the ring
  for (uint64_t id = 1; id <= 300; ++id) REQUIRE(send(*guest, request(id, 16)) == Status::kSuccess);
  f.events.accept = true;
  f.loop.wake();
  std::vector<uint8_t> reply;
  for (uint64_t id = 1; id <= 300; ++id) {
    REQUIRE(guest->receive(&reply, 5000ms) == Status::kSuccess);
    vgpu_msg_header h;
    std::memcpy(&h, reply.data(), sizeof h);
    CHECK(h.request_id == id);
  }
  REQUIRE(eventually([&] {
    std::lock_guard lock(f.events.mu);
    int total = 0;
    for (int b : f.events.bursts) total += b;
    return total == 300;
  }));
  std::lock_guard lock(f.events.mu);
  CHECK(f.events.bursts.size() >= 300 / kRequestsPerBurst);
  for (int b : f.events.bursts) {
    CHECK(b >= 1);
    CHECK(b <= kRequestsPerBurst);
  }
}

TEST_CASE("a pass over the channels that read bursts is ended once, after all of them") {
  Fixture f;
  std::unique_ptr<GuestChannel> a, b;
  std::string why;
  REQUIRE(GuestChannel::connect(f.path, "alice", &a, &why) == Status::kSuccess);
  REQUIRE(GuestChannel::connect(f.path, "bob", &b, &why) == Status::kSuccess);
  f.events.accept = false;  // both rings fill before the loop reads either
  for (uint64_t id = 1; id <= 100; ++id) {
    REQUIRE(send(*a, request(id, 16)) == Status::kSuccess);
    REQUIRE(send(*b, request(id, 16)) == Status::kSuccess);
  }
  f.events.accept = true;
  f.loop.wake();
  std::vector<uint8_t> reply;
  for (int i = 0; i < 100; ++i) {
    REQUIRE(a->receive(&reply, 5000ms) == Status::kSuccess);
    REQUIRE(b->receive(&reply, 5000ms) == Status::kSuccess);
  }
  REQUIRE(eventually([&] {
    std::lock_guard lock(f.events.mu);
    int total = 0;
    for (int n : f.events.passes) total += n;
    return total == static_cast<int>(f.events.bursts.size());
  }));
  std::lock_guard lock(f.events.mu);
  // The first pass found both channels full: one end for their two bursts.
  REQUIRE(!f.events.passes.empty());
  CHECK(f.events.passes.front() == 2);
  for (int n : f.events.passes) CHECK(n >= 1);  // no end for a pass that read nothing
}

TEST_CASE("a closed channel's data area stays mapped while on_close's mapping is held") {
  // Work of the channel still running (a copy into its data area) keeps it:
  // the owner drops the mapping when that work ends, not the loop.
  Fixture f;
  f.events.keep_mapping = true;
  const int before = region_mappings();
  std::unique_ptr<GuestChannel> guest;
  std::string why;
  REQUIRE(GuestChannel::connect(f.path, "alice", &guest, &why) == Status::kSuccess);
  std::span<uint8_t> area;
  {
    std::lock_guard lock(f.events.mu);
    area = f.events.data_area;
  }
  REQUIRE(area.size() == f.geometry.data_size);
  guest.reset();  // the client goes: the loop closes its channel
  REQUIRE(eventually([&] { return f.events.closed.load() == 1; }));
  REQUIRE(eventually([&] { return f.loop.channel_count() == 0; }));
  CHECK(region_mappings() > before);
  std::memset(area.data(), 0x5a, area.size());  // would fault were it unmapped
  CHECK(area[area.size() - 1] == 0x5a);
  {
    std::lock_guard lock(f.events.mu);
    f.events.kept.reset();
  }
  CHECK(region_mappings() == before);
}
