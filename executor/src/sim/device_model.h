// The device the sim backend models: an H100/H200-class GPU (compute
// capability 9.0), its launch limits, and the duration model for kernels.
#pragma once

#include <cstdint>

#include "vgpu/executor/backend.h"
#include "vgpu/fatbin/fatbin.h"
#include "vgpu/executor/sim_backend.h"

namespace vgpu::executor::sim {

inline constexpr uint32_t kMaxThreadsPerBlock = 1024;
inline constexpr uint32_t kMaxBlockDim[3] = {1024, 1024, 64};
inline constexpr uint32_t kMaxGridDim[3] = {2147483647u, 65535, 65535};
inline constexpr uint32_t kMaxSharedPerBlockOptin = 232448;  // 227 KiB
inline constexpr int32_t kDriverVersion = 13000;              // CUDA 13.0
inline constexpr uint32_t kComputeCapability = 90;            // 9.0, as an H100/H200

DeviceInfo make_device_info(const SimConfig& config);

// kInvalidConfiguration for a zero or oversized grid/block, kInvalidValue for
// more dynamic shared memory than a block can have.
// `max_threads` is the kernel's __launch_bounds__ (0: none): a block past it
// fails with kLaunchOutOfResources, as on a GPU.
Status check_launch_config(const uint32_t grid[3], const uint32_t block[3], uint32_t shared_mem,
                           uint32_t max_threads = 0);

// kernel_base_ns + ns_per_thread * (all threads of the grid), saturating.
uint64_t modeled_launch_ns(const SimConfig& config, const uint32_t grid[3], const uint32_t block[3]);

// A kernel's attributes; the PTX and binary versions are what a GPU of this
// capability would choose from its module's images.
// `max_threads` is the kernel's __launch_bounds__ (0: none).
FunctionAttributes function_attributes(const fatbin::Module& image, uint32_t max_threads);

}  // namespace vgpu::executor::sim
