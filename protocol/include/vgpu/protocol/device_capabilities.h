// What a backend can do that no CUDA device attribute says.
//
// GetDeviceProperties answers attributes[160], indexed by CUdevice_attribute;
// CUDA 13 defines fewer than 150. The last slot carries vgpu's own capability
// bits. The guest never reports it as an attribute (cuDeviceGetAttribute
// refuses indices past CU_DEVICE_ATTRIBUTE_MAX).
#pragma once

#include <cstdint>

namespace vgpu::proto {

inline constexpr int kCapabilitiesAttribute = 159;

// Kernels may set graph conditionals: a cudaGraphSetConditional writes the
// 4-byte cell its handle addresses (the sim backend; a GPU's driver evaluates
// conditional handles of its own graphs only).
inline constexpr int32_t kCapGraphConditionals = 1 << 0;

}  // namespace vgpu::proto
