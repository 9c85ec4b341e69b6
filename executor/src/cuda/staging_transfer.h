// The daemon's half of a staged copy (the worker's half is in engine_copies.cpp;
// the protocol in staging_area.h). The bytes come from, or go to, the guest's
// data area; `stop` ends a wait early when the worker answered (an error
// mid-copy) or died.
#pragma once

#include <cstdint>
#include <functional>

#include "staging_area.h"

namespace vgpu::executor::cuda {

// Host to device, before the request is sent: resets the counters and fills
// chunk 0, so a copy that fits one slot needs no wake-up at all.
void stage_first_chunk(StagingArea& staging, const uint8_t* src, uint64_t size);

// Host to device, after the request is sent: fills chunks 1.. as the worker
// frees slots.
StagingArea::Wait feed_chunks(StagingArea& staging, const uint8_t* src, uint64_t size,
                              uint64_t deadline_ns, const std::function<bool()>& stop);

// Device to host, after the request is sent (counters reset before it): copies
// each chunk out as the worker fills it and hands its slot back.
StagingArea::Wait drain_chunks(StagingArea& staging, uint8_t* dst, uint64_t size,
                               uint64_t deadline_ns, const std::function<bool()>& stop);

// Whether a worker's answer to a staged copy came too soon: it reports
// success (`result` 0) although the wait for the bytes was stopped before
// every chunk moved. A worker that does so broke the protocol; the bytes the
// guest would get are partly stale.
inline bool answered_too_soon(StagingArea::Wait moved, int32_t result) {
  return moved == StagingArea::Wait::kStopped && result == 0;
}

}  // namespace vgpu::executor::cuda
