#include "vgpu/transport/guest_channel.h"

#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <optional>
#include <thread>

#include "vgpu/protocol/handover.h"
#include "vgpu/transport/unix_socket.h"

namespace vgpu::transport {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Status GuestChannel::connect(const std::string& socket_path, const std::string& vm,
                             std::unique_ptr<GuestChannel>* out, std::string* why) {
  if (vm.empty() || vm.size() >= VGPU_VM_NAME_MAX) {
    *why = "the VM name must be 1 to " + std::to_string(VGPU_VM_NAME_MAX - 1) + " characters";
    return Status::kInvalidValue;
  }
  const int sock = connect_unix(socket_path, why);
  if (sock < 0) return Status::kNoDevice;

  vgpu_hello hello{};
  hello.magic = VGPU_HELLO_MAGIC;
  hello.version = VGPU_HANDOVER_VERSION;
  std::memcpy(hello.vm_name, vm.data(), vm.size());
  if (!send_with_fds(sock, {reinterpret_cast<const uint8_t*>(&hello), sizeof hello}, {})) {
    *why = "vgpud closed the connection during the hand-over";
    close(sock);
    return Status::kNoDevice;
  }
  vgpu_welcome welcome{};
  std::vector<int> fds;
  const long n =
      recv_with_fds(sock, {reinterpret_cast<uint8_t*>(&welcome), sizeof welcome}, &fds, 3);
  auto fail = [&](Status s, std::string msg) {
    for (int fd : fds) close(fd);
    close(sock);
    *why = std::move(msg);
    return s;
  };
  if (n != static_cast<long>(sizeof welcome) || welcome.magic != VGPU_WELCOME_MAGIC)
    return fail(Status::kNoDevice, "vgpud did not answer the hand-over (is it a vgpud socket?)");
  if (welcome.status != 0) {
    welcome.message[sizeof welcome.message - 1] = '\0';
    return fail(static_cast<Status>(welcome.status),
                std::string("vgpud refused VM '") + vm + "': " + welcome.message);
  }
  if (fds.size() != 3) return fail(Status::kNoDevice, "vgpud sent an incomplete hand-over");

  std::unique_ptr<Region> region;
  if (Status s = Region::attach(fds[0], &region, why); !ok(s)) {
    close(fds[1]);
    close(fds[2]);
    close(sock);
    return s;
  }
  out->reset(new GuestChannel(sock, std::move(region), Doorbell(fds[1]), Doorbell(fds[2])));
  return Status::kSuccess;
}

GuestChannel::GuestChannel(int sock, std::unique_ptr<Region> region, Doorbell host_bell,
                           Doorbell own_bell)
    : sock_(sock),
      region_(std::move(region)),
      host_bell_(std::move(host_bell)),
      own_bell_(std::move(own_bell)) {
  auto* h = region_->header();
  requests_ = RingWriter(&h->req, region_->req_ring(), region_->geometry().ring_size);
  replies_ = RingReader(&h->resp, region_->resp_ring(), region_->geometry().ring_size);
}

GuestChannel::~GuestChannel() { close(sock_); }

bool GuestChannel::host_closed() {
  if (std::atomic_ref<uint32_t>(region_->header()->host_state).load(std::memory_order_acquire) ==
      VGPU_HOST_CLOSED) {
    gone_ = true;
  }
  return gone_;
}

bool GuestChannel::check_alive() {
  if (host_closed()) return false;
  pollfd p{sock_, POLLIN, 0};
  if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLIN))) gone_ = true;
  return !gone_;
}

uint64_t GuestChannel::bell_seen() {
  std::lock_guard lock(bell_mu_);
  return bell_drains_;
}

void GuestChannel::sleep_until_rung(std::chrono::milliseconds timeout, uint64_t seen) {
  std::unique_lock lock(bell_mu_);
  if (bell_drains_ != seen) return;
  if (bell_sleeper_) {
    // Until the sleeper drains the bell, or leaves it unwatched.
    bell_drained_.wait_for(lock, timeout, [&] { return bell_drains_ != seen || !bell_sleeper_; });
    return;
  }
  bell_sleeper_ = true;
  lock.unlock();
  pollfd p[2] = {{own_bell_.fd(), POLLIN, 0}, {sock_, POLLIN, 0}};
  const int r = poll(p, 2, static_cast<int>(timeout.count()));
  const bool rung = r > 0 && (p[0].revents & POLLIN);
  if (rung) own_bell_.drain();
  if (r > 0 && (p[1].revents & (POLLIN | POLLHUP))) gone_ = true;
  lock.lock();
  bell_sleeper_ = false;
  if (rung || gone_) ++bell_drains_;  // what woke us may be what the other thread waits for
  bell_drained_.notify_all();
}

Status GuestChannel::send(std::span<const std::span<const uint8_t>> parts) {
  for (;;) {
    if (gone_) return Status::kDevicesUnavailable;
    switch (requests_.write(parts)) {
      case RingWriter::Result::kOk:
        if (requests_.consumer_waiting()) host_bell_.ring();
        return Status::kSuccess;
      case RingWriter::Result::kCorrupt:
        return Status::kInvalidValue;
      case RingWriter::Result::kFull:
        break;
    }
    // The host is behind (or back-pressuring us): sleep until it frees space.
    const uint64_t seen = bell_seen();
    requests_.set_producer_waiting(true);
    size_t len = 0;
    for (const auto& p : parts) len += p.size();
    if (!requests_.has_room(static_cast<uint32_t>(len + VGPU_MSG_ALIGN))) {
      if (requests_.consumer_waiting()) host_bell_.ring();
      sleep_until_rung(std::chrono::milliseconds(100), seen);
      check_alive();
    }
    requests_.set_producer_waiting(false);
  }
}

Status GuestChannel::try_send(std::span<const std::span<const uint8_t>> parts) {
  if (gone_) return Status::kDevicesUnavailable;
  switch (requests_.write(parts)) {
    case RingWriter::Result::kOk:
      if (requests_.consumer_waiting()) host_bell_.ring();
      if (awaiting_room_) {
        requests_.set_producer_waiting(false);
        awaiting_room_ = false;
      }
      return Status::kSuccess;
    case RingWriter::Result::kCorrupt:
      return Status::kInvalidValue;
    case RingWriter::Result::kFull:
      break;
  }
  awaiting_room_ = true;
  // The host rings when it frees space (the caller waits on replies meanwhile,
  // and a ring wakes that wait too); wake it in case it sleeps.
  requests_.set_producer_waiting(true);
  if (requests_.consumer_waiting()) host_bell_.ring();
  return Status::kNotReady;
}

Status GuestChannel::receive(std::vector<uint8_t>* out, std::chrono::milliseconds timeout) {
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  const auto poll_until = start + poll_;
  std::optional<Clock::time_point> taken;  // when the host was seen to have our requests
  for (;;) {
    switch (replies_.read(out)) {
      case RingReader::Result::kMessage:
        if (replies_.producer_needs_wake()) host_bell_.ring();
        return Status::kSuccess;
      case RingReader::Result::kCorrupt:
        gone_ = true;
        return Status::kDevicesUnavailable;
      case RingReader::Result::kEmpty:
        break;
    }
    // While polling only the region's flag (no system call); the socket
    // (a daemon that died without closing) before sleeping.
    if (host_closed()) return Status::kDevicesUnavailable;
    const auto now = Clock::now();
    if (now < poll_until && now < deadline) {
      // Until the host's loop has taken our requests it is not running, and
      // may be waiting for this very core: give it away at once. Once taken,
      // an answer from a thread on another core is usually a pause away.
      if (!taken && requests_.all_read()) taken = now;
      if (taken) {
        poll_step(now - *taken);
      } else {
        sched_yield();
      }
      continue;
    }
    if (!check_alive()) return Status::kDevicesUnavailable;
    if (now >= deadline) return Status::kNotReady;
    const uint64_t seen = bell_seen();
    replies_.set_consumer_waiting(true);
    if (replies_.empty()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      // Wake at least every 100 ms to notice a daemon that died without a hang-up.
      sleep_until_rung(std::min(left + std::chrono::milliseconds(1),
                                std::chrono::milliseconds(100)), seen);
    }
    replies_.set_consumer_waiting(false);
  }
}

}  // namespace vgpu::transport
