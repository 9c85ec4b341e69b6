// How much of a launch's run time in the worker counts towards its device
// time. Only the time the worker had a CPU: on a loaded host it also waits
// for one, and that wait is the host's delay, not the tenant's. The clock
// that says so (the process's CPU time) is a system call, so the worker reads
// it once per batch and scales each launch's wall time by the batch's share
// of CPU; exact when nothing preempted the batch.
#pragma once

#include <cstdint>
#include <span>

#include "worker_protocol.h"

namespace vgpu::executor::sim {

// `wall_ns`: the batch's wall time (the sum of done[i].ran_ns); `cpu_ns`: the
// process's CPU time over it. More CPU than wall time (a kernel with threads
// of its own) leaves the wall times as they are.
inline void count_only_cpu_time(std::span<wire::LaunchDone> done, uint64_t wall_ns,
                                uint64_t cpu_ns) {
  if (cpu_ns >= wall_ns) return;
  const double share = static_cast<double>(cpu_ns) / static_cast<double>(wall_ns);
  for (wire::LaunchDone& d : done) {
    d.ran_ns = static_cast<uint64_t>(static_cast<double>(d.ran_ns) * share);
  }
}

}  // namespace vgpu::executor::sim
