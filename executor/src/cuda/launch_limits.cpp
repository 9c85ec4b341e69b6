#include "launch_limits.h"

#include <driver_types.h>  // cudaDeviceAttr names only

namespace vgpu::executor::cuda {
namespace {

uint64_t limit(const DeviceInfo& d, cudaDeviceAttr a) {
  const int32_t v = d.attributes[static_cast<size_t>(a)];
  return v > 0 ? static_cast<uint64_t>(v) : UINT64_MAX;
}

}  // namespace

Status check_launch(const DeviceInfo& device, const uint32_t grid[3], const uint32_t block[3],
                    uint32_t shared_mem) {
  const cudaDeviceAttr grid_max[3] = {cudaDevAttrMaxGridDimX, cudaDevAttrMaxGridDimY,
                                      cudaDevAttrMaxGridDimZ};
  const cudaDeviceAttr block_max[3] = {cudaDevAttrMaxBlockDimX, cudaDevAttrMaxBlockDimY,
                                       cudaDevAttrMaxBlockDimZ};
  uint64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || grid[i] > limit(device, grid_max[i])) return Status::kInvalidConfiguration;
    if (block[i] == 0 || block[i] > limit(device, block_max[i])) {
      return Status::kInvalidConfiguration;
    }
    threads *= block[i];
  }
  if (threads > limit(device, cudaDevAttrMaxThreadsPerBlock)) return Status::kInvalidConfiguration;
  if (shared_mem > limit(device, cudaDevAttrMaxSharedMemoryPerBlockOptin)) {
    return Status::kInvalidValue;
  }
  return Status::kSuccess;
}

}  // namespace vgpu::executor::cuda
