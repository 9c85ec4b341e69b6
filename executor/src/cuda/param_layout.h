// A kernel's parameter layout as the fat binary describes it (what the guest
// packs, and what the launch buffer's size is checked against) must be the one
// the driver reads. The driver's comes from cuFuncGetParamInfo.
#pragma once

#include <string>
#include <vector>

#include "vgpu/fatbin/fatbin.h"
#include "worker_protocol.h"

namespace vgpu::executor::cuda {

// Empty when they agree (same count, and each parameter's offset and size);
// otherwise what differs, for the log: "parameter 1: offset 8 size 4 in the
// fat binary, offset 12 size 4 from the driver".
std::string compare_layouts(const fatbin::Kernel& image, const std::vector<wire::ParamSlot>& driver);

}  // namespace vgpu::executor::cuda
