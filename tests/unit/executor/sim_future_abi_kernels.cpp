// A plug-in that needs a newer sim ABI than this vgpud has: it must be
// refused at load, by name, not run against a launch struct without the
// members it reads.
#include "vgpu/sim_kernel.h"

VGPU_SIM_REQUIRE_ABI(VGPU_SIM_ABI + 1);

extern "C" __attribute__((visibility("default"))) int vgpu_sim__Z6futurev(vgpu_sim_launch*) {
  return 0;
}
