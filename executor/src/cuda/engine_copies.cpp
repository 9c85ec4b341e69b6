// The engine: copies between the guest's bytes (through the staging slots)
// and device memory, chunk by chunk, two chunks in flight. The daemon's half
// is staging_transfer.cpp; the protocol is in staging_area.h.
#include "engine.h"

namespace vgpu::executor::cuda {
namespace {

// The daemon stopped feeding or draining (it went away, or a bug): the copy
// cannot finish. An operating-system error is what the driver reports when
// something outside the GPU breaks.
constexpr CUresult kStagingBroken = CUDA_ERROR_OPERATING_SYSTEM;

}  // namespace

Timed Engine::copy_in(uint64_t dst, uint64_t size, uint64_t deadline_ns,
                      const std::function<bool()>& stop) {
  if (!staging_ || size == 0) return {CUDA_ERROR_INVALID_VALUE, 0};
  StagingArea& s = *staging_;
  const uint32_t n = s.chunks(size);
  return timed([&]() -> CUresult {
    for (uint32_t k = 0; k < n; ++k) {
      if (s.wait_filled(k + 1, deadline_ns, stop) != StagingArea::Wait::kReady) {
        return kStagingBroken;
      }
      const uint64_t offset = uint64_t{k} * s.slot_bytes();
      if (CUresult r = api_.cuMemcpyHtoDAsync(dst + offset, s.slot_for(k),
                                              s.chunk_length(size, k), stream_);
          r != CUDA_SUCCESS) {
        return r;
      }
      if (CUresult r = api_.cuEventRecord(slot_done_[k % kStagingSlots], stream_);
          r != CUDA_SUCCESS) {
        return r;
      }
      if (k > 0) {  // the previous chunk is on the device: its slot is free
        if (CUresult r = wait_event(slot_done_[(k - 1) % kStagingSlots]); r != CUDA_SUCCESS) {
          return r;
        }
        s.publish_consumed(k);
      }
    }
    if (CUresult r = wait_event(slot_done_[(n - 1) % kStagingSlots]); r != CUDA_SUCCESS) return r;
    s.publish_consumed(n);
    return CUDA_SUCCESS;
  });
}

Timed Engine::copy_out(uint64_t src, uint64_t size, uint64_t deadline_ns,
                       const std::function<bool()>& stop) {
  if (!staging_ || size == 0) return {CUDA_ERROR_INVALID_VALUE, 0};
  StagingArea& s = *staging_;
  const uint32_t n = s.chunks(size);
  return timed([&]() -> CUresult {
    for (uint32_t k = 0; k < n; ++k) {
      // The slot's previous chunk (k - 2) must have been copied out.
      if (k >= kStagingSlots &&
          s.wait_consumed(k - 1, deadline_ns, stop) != StagingArea::Wait::kReady) {
        return kStagingBroken;
      }
      const uint64_t offset = uint64_t{k} * s.slot_bytes();
      if (CUresult r = api_.cuMemcpyDtoHAsync(s.slot_for(k), src + offset,
                                              s.chunk_length(size, k), stream_);
          r != CUDA_SUCCESS) {
        return r;
      }
      if (CUresult r = api_.cuEventRecord(slot_done_[k % kStagingSlots], stream_);
          r != CUDA_SUCCESS) {
        return r;
      }
      if (k > 0) {  // the previous chunk has landed: the daemon may copy it out
        if (CUresult r = wait_event(slot_done_[(k - 1) % kStagingSlots]); r != CUDA_SUCCESS) {
          return r;
        }
        s.publish_filled(k);
      }
    }
    if (CUresult r = wait_event(slot_done_[(n - 1) % kStagingSlots]); r != CUDA_SUCCESS) return r;
    s.publish_filled(n);
    return CUDA_SUCCESS;
  });
}

}  // namespace vgpu::executor::cuda
