// The host side of one channel: a region, its two doorbells, and the reply
// path. Requests are read by the transport loop thread only; replies may be
// written from any thread (the loop for immediate calls, the dispatcher for
// queued work).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "vgpu/protocol/status.h"
#include "vgpu/transport/doorbell.h"
#include "vgpu/transport/region.h"
#include "vgpu/transport/ring.h"

namespace vgpu::transport {

class HostChannel {
 public:
  static Status create(const RegionGeometry& geometry, std::unique_ptr<HostChannel>* out);
  // The region in a file at `path` instead of a memfd (ivshmem-plain).
  static Status create_in_file(const std::string& path, const RegionGeometry& geometry,
                               std::unique_ptr<HostChannel>* out, std::string* why);

  Region& region() { return *region_; }
  int request_doorbell_fd() const { return own_bell_.fd(); }   // the host sleeps on it
  int response_doorbell_fd() const { return guest_bell_.fd(); }  // handed to the guest

  // Loop thread only.
  RingReader::Result read_request(std::vector<uint8_t>* out);
  bool requests_pending() const { return !requests_.empty(); }
  void set_sleeping(bool sleeping) { requests_.set_consumer_waiting(sleeping); }
  void drain_doorbell() { own_bell_.drain(); }
  // The loop is alive: the guest tells a live host from a dead one by the
  // heartbeat moving (protocol/region.h, Liveness).
  void beat() {
    std::atomic_ref<uint64_t> hb(region_->header()->host_heartbeat);
    hb.store(hb.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // Any thread. A reply that does not fit waits in a bounded host-side outbox
  // (flushed by flush()); a guest that lets it overflow is marked stalled.
  void write_reply(std::span<const std::span<const uint8_t>> parts);
  // Writes queued replies while there is room; true when none are left.
  bool flush();
  bool has_outbox() const;
  // The guest stopped reading replies (outbox over its bound) or broke the
  // ring rules: the channel must be torn down.
  bool broken() const;
  bool stalled() const;  // broken because the outbox passed its bound

  // Tells the guest the host is gone (host_state CLOSED) and wakes it.
  void close();

  static constexpr size_t kMaxOutboxBytes = 8u << 20;

 private:
  HostChannel(std::unique_ptr<Region> region, Doorbell own, Doorbell guest);
  static Status wrap(std::unique_ptr<Region> region, std::unique_ptr<HostChannel>* out);
  bool write_locked(std::span<const std::span<const uint8_t>> parts);

  std::unique_ptr<Region> region_;
  Doorbell own_bell_;
  Doorbell guest_bell_;
  RingReader requests_;

  mutable std::mutex reply_mu_;  // guards everything below but the atomics
  RingWriter replies_;
  std::deque<std::vector<uint8_t>> outbox_;
  size_t outbox_bytes_ = 0;
  bool stalled_ = false;
  bool corrupt_ = false;
  // Copies of "outbox_ is not empty" and "corrupt_ || stalled_", written under
  // the lock: the loop asks both of every channel on every pass, and an
  // atomic load spares it two locks per channel.
  std::atomic<bool> outbox_waiting_{false};
  std::atomic<bool> broken_{false};
};

}  // namespace vgpu::transport
