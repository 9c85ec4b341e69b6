// The guest side of a channel for a simulated VM: it connects to vgpud's
// hand-over socket, maps the region it is given, and plays the part the kernel
// module plays in a real VM (writing requests, reading replies, doorbells).
//
// Threads as GuestTransport says: one sender and one receiver at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "vgpu/protocol/status.h"
#include "vgpu/transport/doorbell.h"
#include "vgpu/transport/guest_transport.h"
#include "vgpu/transport/region.h"
#include "vgpu/transport/ring.h"

namespace vgpu::transport {

class GuestChannel final : public GuestTransport {
 public:
  // Connects as simulated VM `vm` to the daemon socket at `socket_path`.
  // On failure `why` says what went wrong in words a user can act on.
  static Status connect(const std::string& socket_path, const std::string& vm,
                        std::unique_ptr<GuestChannel>* out, std::string* why);
  ~GuestChannel() override;

  std::span<uint8_t> data() override { return region_->data(); }

  // Writes one request; waits while the request ring is full.
  // kDevicesUnavailable once the daemon has gone away.
  Status send(std::span<const std::span<const uint8_t>> parts) override;
  Status try_send(std::span<const std::span<const uint8_t>> parts) override;
  // The next reply, waiting up to `timeout` (polling first, then sleeping).
  // kNotReady on timeout, kDevicesUnavailable once the daemon has gone away.
  Status receive(std::vector<uint8_t>* out, std::chrono::milliseconds timeout) override;
  void set_poll(std::chrono::microseconds poll) override { poll_ = poll; }

  bool daemon_gone() const override { return gone_; }
  // The host's liveness counter (protocol/region.h). A simulated VM learns of
  // a dead daemon from its hand-over socket; this is what a real VM's kernel
  // module watches instead.
  uint64_t host_heartbeat() const {
    return std::atomic_ref<uint64_t>(region_->header()->host_heartbeat)
        .load(std::memory_order_relaxed);
  }

 private:
  GuestChannel(int sock, std::unique_ptr<Region> region, Doorbell host_bell, Doorbell own_bell);
  // Sleeps until the own doorbell rings, the socket hangs up, or the timeout;
  // returns at once if the doorbell was drained since `seen` (bell_seen()),
  // since what that ring announced may be what the caller waits for. The
  // sender (ring full) and the receiver may both wait: one sleeps on the
  // doorbell and wakes the other.
  void sleep_until_rung(std::chrono::milliseconds timeout, uint64_t seen);
  uint64_t bell_seen();
  bool host_closed();  // the region says so (no system call)
  bool check_alive();  // that, or the hand-over socket hung up

  int sock_;
  std::unique_ptr<Region> region_;
  Doorbell host_bell_;  // we ring it: the request doorbell
  Doorbell own_bell_;   // we sleep on it: the response doorbell
  RingWriter requests_;
  RingReader replies_;
  std::atomic<bool> gone_ = false;
  bool awaiting_room_ = false;  // the sender's: try_send found the ring full
  std::chrono::microseconds poll_ = kPollBeforeSleep;  // the receiver's
  std::mutex bell_mu_;
  std::condition_variable bell_drained_;
  bool bell_sleeper_ = false;  // a thread sleeps on own_bell_
  uint64_t bell_drains_ = 0;   // times own_bell_ was drained
};

}  // namespace vgpu::transport
