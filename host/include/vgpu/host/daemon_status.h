// The daemon's own accounting, as the admin socket's `status` operation
// (admins only; `vgpuctl status`) returns it: per VM, what it holds on the
// device (the backend's tables), what waits in its queue (the dispatcher),
// and what it did wrong (TenantCounters); the transport's counters; and the
// daemon process's footprint (resident memory, descriptors, threads, child
// processes). Tests read it to check that a VM that went away left nothing
// behind and that attacks were counted.
#pragma once

#include <chrono>

#include <nlohmann/json.hpp>

#include "vgpu/executor/backend.h"
#include "vgpu/host/gpu_set.h"
#include "vgpu/host/tenant_counters.h"
#include "vgpu/scheduler/dispatcher_group.h"
#include "vgpu/transport/host_loop.h"

namespace vgpu::host {

struct StatusSources {
  const transport::HostLoop* loop = nullptr;
  const executor::Backend* backend = nullptr;
  // The host's GPUs when it has several (`backend` is then this set); null: one.
  const GpuSet* gpu_set = nullptr;
  const scheduler::DispatcherGroup* dispatcher = nullptr;
  const TenantCounters* counters = nullptr;
  std::chrono::steady_clock::time_point started;
};

// Any thread. Every source is internally locked.
nlohmann::json daemon_status(const StatusSources& sources);

// The calling process's footprint from /proc/self: rss_bytes, fds, threads,
// children (live child processes: the backends' workers).
nlohmann::json process_footprint();

}  // namespace vgpu::host
