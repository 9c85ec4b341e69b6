#include "vgpu/transport/host_channel.h"

#include <atomic>
#include <cstring>

namespace vgpu::transport {

Status HostChannel::create(const RegionGeometry& geometry, std::unique_ptr<HostChannel>* out) {
  std::unique_ptr<Region> region;
  if (Status s = Region::create(geometry, &region); !ok(s)) return s;
  return wrap(std::move(region), out);
}

Status HostChannel::create_in_file(const std::string& path, const RegionGeometry& geometry,
                                   std::unique_ptr<HostChannel>* out, std::string* why) {
  std::unique_ptr<Region> region;
  if (Status s = Region::create_file(path, geometry, &region, why); !ok(s)) return s;
  return wrap(std::move(region), out);
}

Status HostChannel::wrap(std::unique_ptr<Region> region, std::unique_ptr<HostChannel>* out) {
  Doorbell own = Doorbell::create();
  Doorbell guest = Doorbell::create();
  if (!own.valid() || !guest.valid()) return Status::kMemoryAllocation;
  out->reset(new HostChannel(std::move(region), std::move(own), std::move(guest)));
  return Status::kSuccess;
}

HostChannel::HostChannel(std::unique_ptr<Region> region, Doorbell own, Doorbell guest)
    : region_(std::move(region)), own_bell_(std::move(own)), guest_bell_(std::move(guest)) {
  auto* h = region_->header();
  const uint32_t ring = region_->geometry().ring_size;  // the host's copy, never re-read
  requests_ = RingReader(&h->req, region_->req_ring(), ring);
  replies_ = RingWriter(&h->resp, region_->resp_ring(), ring);
}

RingReader::Result HostChannel::read_request(std::vector<uint8_t>* out) {
  const auto r = requests_.read(out);
  if (r == RingReader::Result::kCorrupt) {
    std::lock_guard lock(reply_mu_);
    corrupt_ = true;
    broken_.store(true, std::memory_order_release);
  } else if (r == RingReader::Result::kMessage && requests_.producer_needs_wake()) {
    guest_bell_.ring();  // the guest waits for room in its request ring
  }
  return r;
}

bool HostChannel::write_locked(std::span<const std::span<const uint8_t>> parts) {
  switch (replies_.write(parts)) {
    case RingWriter::Result::kOk:
      if (replies_.consumer_waiting()) guest_bell_.ring();
      return true;
    case RingWriter::Result::kCorrupt:
      corrupt_ = true;
      broken_.store(true, std::memory_order_release);
      return true;  // dropped: the channel is being torn down
    case RingWriter::Result::kFull:
      return false;
  }
  return false;
}

void HostChannel::write_reply(std::span<const std::span<const uint8_t>> parts) {
  std::lock_guard lock(reply_mu_);
  if (corrupt_ || stalled_) return;
  if (outbox_.empty() && write_locked(parts)) return;
  // Keep order: once something waits in the outbox, everything after waits too.
  std::vector<uint8_t> copy;
  for (const auto& p : parts) copy.insert(copy.end(), p.begin(), p.end());
  outbox_bytes_ += copy.size();
  outbox_.push_back(std::move(copy));
  outbox_waiting_.store(true, std::memory_order_release);
  if (outbox_bytes_ > kMaxOutboxBytes) {
    stalled_ = true;
    broken_.store(true, std::memory_order_release);
  }
  // Ask the guest to ring us when it has read replies and made room.
  replies_.set_producer_waiting(true);
}

bool HostChannel::flush() {
  // The common case, without the lock: nothing waits. A reply queued just
  // after this look is flushed on the loop's next pass, as it would be if it
  // had been queued just after a look under the lock.
  if (!outbox_waiting_.load(std::memory_order_acquire)) return true;
  std::lock_guard lock(reply_mu_);
  while (!outbox_.empty()) {
    const std::span<const uint8_t> part(outbox_.front());
    if (!write_locked({&part, 1})) return false;
    outbox_bytes_ -= outbox_.front().size();
    outbox_.pop_front();
  }
  outbox_waiting_.store(false, std::memory_order_release);
  replies_.set_producer_waiting(false);
  return true;
}

bool HostChannel::has_outbox() const { return outbox_waiting_.load(std::memory_order_acquire); }

bool HostChannel::broken() const { return broken_.load(std::memory_order_acquire); }

bool HostChannel::stalled() const {
  std::lock_guard lock(reply_mu_);
  return stalled_;
}

void HostChannel::close() {
  std::atomic_ref<uint32_t>(region_->header()->host_state)
      .store(VGPU_HOST_CLOSED, std::memory_order_release);
  guest_bell_.ring();
}

}  // namespace vgpu::transport
