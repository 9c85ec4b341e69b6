// The pinned staging buffer one context's bulk copies go through: a shared
// memfd mapped by the daemon and by the context's worker, laid out as a header
// page and two slots of `slot_bytes` each. The worker registers the slots with
// the driver once (cuMemHostRegister), so every copy DMAs from or into pinned
// memory that was allocated once, not per call.
//
// A copy of N bytes moves in chunks of at most slot_bytes, chunk k through
// slot k % 2 (double buffering): while the GPU copies one slot, the daemon
// fills or empties the other. Two counters in the header say how far each side
// is, and each side sleeps on the other's counter (a futex shared by both
// processes):
//
//   filled    chunks whose bytes are in their slot   (producer: daemon for
//                                                     host-to-device, worker
//                                                     for device-to-host)
//   consumed  chunks whose slot may be reused        (the other side)
//
// A producer may write chunk k only once consumed >= k - 1 (its slot's previous
// chunk, k - 2, is done). The daemon resets both counters before each copy; the
// worker runs one copy at a time, so the counters are never shared by two.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

namespace vgpu::executor::cuda {

inline constexpr uint64_t kStagingHeaderBytes = 4096;
inline constexpr uint32_t kStagingSlots = 2;

struct StagingHeader {
  alignas(64) std::atomic<uint32_t> filled;
  alignas(64) std::atomic<uint32_t> consumed;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free && sizeof(std::atomic<uint32_t>) == 4,
              "the futex needs a plain 32-bit word");
static_assert(sizeof(StagingHeader) <= kStagingHeaderBytes);

// Monotonic nanoseconds (CLOCK_MONOTONIC), the clock of every deadline here.
uint64_t monotonic_ns();

class StagingArea {
 public:
  // Bytes of the whole region for slots of `slot_bytes`.
  static uint64_t region_bytes(uint64_t slot_bytes) {
    return kStagingHeaderBytes + kStagingSlots * slot_bytes;
  }

  // `region` is region_bytes(slot_bytes) of memory both sides map.
  StagingArea(uint8_t* region, uint64_t slot_bytes);

  uint64_t slot_bytes() const { return slot_bytes_; }
  uint8_t* slots() const { return region_ + kStagingHeaderBytes; }
  uint8_t* slot_for(uint32_t chunk) const { return slots() + (chunk % kStagingSlots) * slot_bytes_; }

  // How a copy of `size` bytes is cut: chunk count, and the length of chunk k.
  uint32_t chunks(uint64_t size) const;
  uint64_t chunk_length(uint64_t size, uint32_t chunk) const;

  void reset();  // both counters to 0 (the daemon, before each copy)
  void publish_filled(uint32_t n) { publish(header()->filled, n); }
  void publish_consumed(uint32_t n) { publish(header()->consumed, n); }
  uint32_t filled() const { return header()->filled.load(std::memory_order_acquire); }
  uint32_t consumed() const { return header()->consumed.load(std::memory_order_acquire); }
  // Wakes whoever sleeps on either counter (so it looks at why the copy stopped).
  void wake_all();

  enum class Wait { kReady, kStopped, kTimedOut };
  // Waits until the counter reaches n. `stop` (may be empty) is asked every
  // few milliseconds while waiting and ends the wait when it returns true,
  // unless the counter reached n meanwhile (kReady wins over kStopped).
  Wait wait_filled(uint32_t n, uint64_t deadline_ns, const std::function<bool()>& stop) const {
    return wait(header()->filled, n, deadline_ns, stop);
  }
  Wait wait_consumed(uint32_t n, uint64_t deadline_ns, const std::function<bool()>& stop) const {
    return wait(header()->consumed, n, deadline_ns, stop);
  }

 private:
  StagingHeader* header() const { return reinterpret_cast<StagingHeader*>(region_); }
  static void publish(std::atomic<uint32_t>& counter, uint32_t n);
  static Wait wait(std::atomic<uint32_t>& counter, uint32_t n, uint64_t deadline_ns,
                   const std::function<bool()>& stop);

  uint8_t* const region_;
  const uint64_t slot_bytes_;
};

}  // namespace vgpu::executor::cuda
