// What vgpu-smi shows, fetched from vgpud over the VM's channel: the virtual
// GPU (name, UUID, the VM's memory cap and use, the CUDA version), the VM's
// own share of the GPU over a short sample, and the student's GPU-time
// budget.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "processes.h"
#include "vgpu/protocol/calls.h"
#include "vgpu/protocol/status.h"

namespace vgpu::smi {

struct Budget {
  bool known = false;  // vgpud answered (an older one does not)
  bool bound = false;  // the VM is bound to a student
  bool limited = false;
  bool open = true;         // inside a date range's days
  bool best_effort = false;  // past the budget, running best-effort
  bool renews = true;       // false: a fixed date range
  uint64_t budget_ns = 0, spent_ns = 0, left_ns = 0;
  int64_t window_start = 0, window_end = 0;  // unix seconds
  uint64_t memory_cap = 0;
  uint32_t on_exhaust = 0;  // 0 reject, 1 wait, 2 best-effort
  std::string vm, student, course, quota;
};

struct Snapshot {
  std::string name;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-..."
  int cuda_version = 0;  // 13000 for 13.0
  uint64_t memory_total = 0, memory_used = 0;
  double utilization = 0;  // percent of the sample the VM's work had the GPU
  Budget budget;
  std::vector<GpuProcess> processes;  // this VM's, as this user may see them (processes.h)
};

// Gives each process the device memory vgpud says its sessions hold: a
// simulated VM's by process id, a real VM's by its /dev/vgpu client ids.
void attribute_memory(const proto::TenantProcessesReply& held, std::vector<GpuProcess>* processes);

// Fills `out`, sampling utilization over `sample_ms`. On failure `why` says
// what (vgpud unreachable, this VM not admitted).
Status take_snapshot(int sample_ms, Snapshot* out, std::string* why);

}  // namespace vgpu::smi
