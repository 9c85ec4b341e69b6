// The engine: a batch of launches kept in flight. Going back to the daemon
// after every launch leaves the GPU idle for a round trip each time; here the
// next launches are already queued behind the one running, and each is still
// timed by its own events.
#include <algorithm>

#include "cu_status.h"
#include "engine.h"

namespace vgpu::executor::cuda {

size_t Engine::launch_batch(std::span<const LaunchSpec> launches, uint64_t budget_ns,
                            uint32_t depth, Timed* results) {
  if (launches.empty()) return 0;
  depth = std::clamp<uint32_t>(depth, 1, kMaxLaunchesInFlight);
  constexpr size_t kRing = kMaxLaunchesInFlight + 1;  // the size of ring_
  auto event = [&](size_t k) { return ring_[k % kRing]; };

  if (CUresult r = api_.cuEventRecord(event(0), stream_); r != CUDA_SUCCESS) {
    results[0] = {note(r), 0};
    return 1;
  }
  size_t issued = 0, finished = 0;
  uint64_t used = 0;
  bool stop = false;  // a sticky error: nothing more goes to the GPU
  // Waits for the oldest launch in flight and times it.
  auto finish_oldest = [&] {
    Timed& t = results[finished];
    const CUresult waited = wait_event(event(finished + 1));
    if (waited == CUDA_SUCCESS) {
      t.gpu_ns = elapsed_ns(event(finished), event(finished + 1));
    } else {
      if (t.result == CUDA_SUCCESS) t.result = note(waited);
      stop = stop || is_sticky(waited);
    }
    used += t.gpu_ns;
    ++finished;
  };

  while (issued < launches.size() && !stop && (issued == 0 || used < budget_ns)) {
    if (issued - finished == depth) {
      finish_oldest();
      continue;
    }
    Timed& t = results[issued];
    t = {note(issue_launch(launches[issued])), 0};
    const CUresult recorded = api_.cuEventRecord(event(issued + 1), stream_);
    ++issued;
    if (recorded != CUDA_SUCCESS) {
      if (t.result == CUDA_SUCCESS) t.result = note(recorded);
      stop = true;  // its end cannot be waited for: wait for the stream instead
      const CUresult drained = api_.cuStreamSynchronize(stream_);
      for (; finished < issued; ++finished) {
        Timed& f = results[finished];
        if (f.result == CUDA_SUCCESS && drained != CUDA_SUCCESS) f.result = note(drained);
      }
      return issued;
    }
    stop = stop || is_sticky(t.result);
  }
  while (finished < issued) finish_oldest();
  return issued;
}

}  // namespace vgpu::executor::cuda
