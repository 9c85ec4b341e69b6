#include "vgpu/host/placement.h"

#include <fmt/format.h>

#include <algorithm>

namespace vgpu::host {

namespace {

bool fits(const GpuLoad& gpu, uint64_t memory_cap) {
  return memory_cap == 0 || memory_cap <= gpu.free_memory();
}

// Spread's order: less committed weight, then more free memory (the index
// breaks ties: the first one seen stays).
bool spreads_better(const GpuLoad& a, const GpuLoad& b) {
  if (a.committed_weight != b.committed_weight) return a.committed_weight < b.committed_weight;
  return a.free_memory() > b.free_memory();
}

}  // namespace

Result choose_gpu(PlacementPolicy policy, std::span<const GpuLoad> gpus, uint64_t memory_cap,
                  size_t* out) {
  size_t chosen = gpus.size();
  uint64_t most_free = 0;
  for (size_t i = 0; i < gpus.size(); ++i) {
    most_free = std::max(most_free, gpus[i].free_memory());
    if (!fits(gpus[i], memory_cap)) continue;
    if (policy == PlacementPolicy::kPack) {
      chosen = i;
      break;
    }
    if (chosen == gpus.size() || spreads_better(gpus[i], gpus[chosen])) chosen = i;
  }
  if (chosen == gpus.size()) {
    return Result::unavailable(fmt::format(
        "no GPU of this host has room for the VM's memory cap of {} MiB ({} GPUs; the most "
        "free on one is {} MiB)",
        memory_cap >> 20, gpus.size(), most_free >> 20));
  }
  *out = chosen;
  return {};
}

}  // namespace vgpu::host
