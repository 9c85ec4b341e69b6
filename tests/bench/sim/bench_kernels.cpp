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
