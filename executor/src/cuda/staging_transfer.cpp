#include "staging_transfer.h"

#include <cstring>

namespace vgpu::executor::cuda {

void stage_first_chunk(StagingArea& staging, const uint8_t* src, uint64_t size) {
  staging.reset();
  std::memcpy(staging.slot_for(0), src, staging.chunk_length(size, 0));
  staging.publish_filled(1);
}

StagingArea::Wait feed_chunks(StagingArea& staging, const uint8_t* src, uint64_t size,
                              uint64_t deadline_ns, const std::function<bool()>& stop) {
  const uint32_t n = staging.chunks(size);
  for (uint32_t k = 1; k < n; ++k) {
    if (k >= kStagingSlots) {  // the slot's previous chunk must be on the device
      const auto w = staging.wait_consumed(k - 1, deadline_ns, stop);
      if (w != StagingArea::Wait::kReady) return w;
    }
    std::memcpy(staging.slot_for(k), src + uint64_t{k} * staging.slot_bytes(),
                staging.chunk_length(size, k));
    staging.publish_filled(k + 1);
  }
  return StagingArea::Wait::kReady;
}

StagingArea::Wait drain_chunks(StagingArea& staging, uint8_t* dst, uint64_t size,
                               uint64_t deadline_ns, const std::function<bool()>& stop) {
  const uint32_t n = staging.chunks(size);
  for (uint32_t k = 0; k < n; ++k) {
    const auto w = staging.wait_filled(k + 1, deadline_ns, stop);
    if (w != StagingArea::Wait::kReady) return w;
    std::memcpy(dst + uint64_t{k} * staging.slot_bytes(), staging.slot_for(k),
                staging.chunk_length(size, k));
    staging.publish_consumed(k + 1);
  }
  return StagingArea::Wait::kReady;
}

}  // namespace vgpu::executor::cuda
