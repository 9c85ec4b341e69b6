// The engine: batches of launches kept in flight. Going back to the daemon
// after every launch leaves the GPU idle for a round trip each time; here the
// next launches are already queued behind the one running, a batch may hand
// its last launches on to the next one, and each launch is still timed by
// its own events.
#include <algorithm>

#include "cu_status.h"
#include "engine.h"

namespace vgpu::executor::cuda {
namespace {

constexpr size_t kRing = kMaxLaunchesInFlight + 1;  // the size of Engine::ring_

}  // namespace

void Engine::finish_oldest(std::vector<Timed>* done) {
  Timed t = flight_[finished_ % kMaxLaunchesInFlight];
  const CUresult waited = wait_event(ring_[(finished_ + 1) % kRing]);
  if (waited == CUDA_SUCCESS) {
    t.gpu_ns = elapsed_ns(ring_[finished_ % kRing], ring_[(finished_ + 1) % kRing]);
  } else if (t.result == CUDA_SUCCESS) {
    t.result = note(waited);
  }
  done->push_back(t);
  ++finished_;
}

void Engine::finish_launches(std::vector<Timed>* done) {
  while (in_flight() > 0) finish_oldest(done);
}

size_t Engine::launch_batch(std::span<const LaunchSpec> launches, uint64_t budget_ns,
                            uint32_t depth, Leave leave, std::vector<Timed>* done) {
  depth = std::clamp<uint32_t>(depth, 1, kMaxLaunchesInFlight);
  uint64_t used = 0;  // by the launches finished in this call
  bool stop = false;  // a sticky error: nothing more goes to the GPU
  auto finish = [&] {
    finish_oldest(done);
    used += done->back().gpu_ns;
    stop = stop || is_sticky(done->back().result);
  };
  size_t n = 0;
  if (!launches.empty() && in_flight() == 0) {
    // A fresh start: the event that ended the last launch is stale (the GPU
    // may have idled since), so the first launch gets a start of its own.
    if (CUresult r = api_.cuEventRecord(ring_[issued_ % kRing], stream_); r != CUDA_SUCCESS) {
      done->push_back({note(r), 0});
      return 1;
    }
  }
  while (n < launches.size() && !stop && (n == 0 || used < budget_ns)) {
    if (in_flight() >= depth) {
      finish();
      continue;
    }
    Timed& t = flight_[issued_ % kMaxLaunchesInFlight];
    t = {note(issue_launch(launches[n])), 0};
    const CUresult recorded = api_.cuEventRecord(ring_[(issued_ + 1) % kRing], stream_);
    ++issued_;
    ++n;
    if (recorded != CUDA_SUCCESS) {
      // Its end cannot be waited for: wait for the stream instead.
      if (t.result == CUDA_SUCCESS) t.result = note(recorded);
      const CUresult drained = api_.cuStreamSynchronize(stream_);
      for (; finished_ < issued_; ++finished_) {
        Timed f = flight_[finished_ % kMaxLaunchesInFlight];
        if (f.result == CUDA_SUCCESS && drained != CUDA_SUCCESS) f.result = note(drained);
        done->push_back(f);
      }
      return n;
    }
    stop = stop || is_sticky(t.result);
  }
  const bool left = n < launches.size() ? leave.when_cut : leave.at_end;
  if (!left || stop) finish_launches(done);
  return n;
}

}  // namespace vgpu::executor::cuda
