// CPU implementations of the benchmark programs' kernels, for the sim backend
// (plug-in ABI: vgpu/sim_kernel.h).
//
// launch_rate.cu: __global__ void empty() {}
// It does nothing, so it takes no modeled time: the launch benchmark then
// measures forwarding (guest, ring, host, scheduler, worker), not the
// backend's default 5 us per-kernel model.
#include "vgpu/sim_kernel.h"

extern "C" __attribute__((visibility("default"))) int vgpu_sim__Z5emptyv(
    struct vgpu_sim_launch* launch) {
  launch->modeled_ns = 0;
  return 0;
}

// managed_cost.cu:
// __global__ void bump(float* p, size_t n) {
//   size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
//   for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) p[i] += 1.0f;
// }
// Every element once, whatever the grid: the grid-stride loop's effect.
extern "C" __attribute__((visibility("default"))) int vgpu_sim__Z4bumpPfm(
    struct vgpu_sim_launch* launch) {
  struct Params {
    float* p;
    unsigned long n;
  } params;
  if (launch->params == nullptr || launch->params_size < sizeof params) return 1;
  __builtin_memcpy(&params, launch->params, sizeof params);
  for (unsigned long i = 0; i < params.n; ++i) params.p[i] += 1.0f;
  return 0;
}
