// Which of the host's GPUs a VM goes to. A VM is placed when its first
// device context is created and keeps that GPU while it has contexts
// (gpu_set.h); this is the choice itself, over a snapshot of each GPU's load.
//
//  - spread: the GPU with the least committed scheduling weight among those
//    the VM's memory cap fits, then the one with the most free memory, then
//    the lowest index. Students' work is spread so that each GPU's fair
//    shares are as large as they can be.
//  - pack: the first GPU, in order, that the cap fits: one GPU fills before
//    the next is used (the others stay free for large jobs, or powered down).
//
// Memory: a GPU's committed memory is the sum of the caps of the VMs placed
// on it (what a VM without a cap holds now). A cap fits where it is no more
// than the GPU's total less its committed memory; a VM without a cap fits
// every GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "vgpu/policy/quota.h"
#include "vgpu/policy/units.h"  // parse_placement, placement_name
#include "vgpu/result.h"

namespace vgpu::host {

// The host's (vgpud --placement), or a course's or student's quota's.
using PlacementPolicy = policy::Placement;

struct GpuLoad {
  double committed_weight = 0;  // the weights of the VMs placed on it
  uint64_t total_memory = 0;
  uint64_t committed_memory = 0;  // caps (or use, where uncapped) of the VMs placed on it
  uint64_t free_memory() const {
    return committed_memory >= total_memory ? 0 : total_memory - committed_memory;
  }
};

// The GPU for a VM whose memory cap is `memory_cap` bytes (0: none), in
// `*out`. Unavailable, with a message naming the cap and the most any GPU
// has free, when it fits none; `*out` is unchanged then.
Result choose_gpu(PlacementPolicy policy, std::span<const GpuLoad> gpus, uint64_t memory_cap,
                  size_t* out);

}  // namespace vgpu::host
