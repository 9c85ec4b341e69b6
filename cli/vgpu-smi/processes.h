// The guest processes using the virtual GPU, as nvidia-smi lists a GPU's
// processes: found in /proc, each one that has vgpu's /dev/vgpu open (a real
// VM) or has a libcuda.so.1 mapped (a simulated VM's programs run on vgpu's
// guest driver through vgpu-run; of those, the ones vgpu-run started for the
// same VM and daemon as this one). Only processes this user may inspect are
// seen (their own, or all for root), as with nvidia-smi in a container.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace vgpu::smi {

struct GpuProcess {
  pid_t pid = 0;
  std::string name;  // /proc/PID/comm
  // Its /dev/vgpu files' client ids (the guest module's fdinfo): how vgpud
  // names a real VM's processes. Empty for a simulated VM's.
  std::vector<uint32_t> clients;
  bool memory_known = false;  // vgpud said (snapshot.h)
  uint64_t memory = 0;        // device memory its allocations hold
};

// Every such process but `self`, by pid.
std::vector<GpuProcess> gpu_processes(const std::string& proc_root, pid_t self);

}  // namespace vgpu::smi
