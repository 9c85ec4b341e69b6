// How the sim moves bytes between host memory and its device memory: as a
// GPU's copy engine does, large copies bypass the CPU caches (non-temporal
// stores), so a 256 MiB copy neither evicts everything else nor pays for
// reading the destination into the cache first. Small copies, whose bytes are
// likely cached and used soon, are plain memcpy.
#pragma once

#include <cstdint>

namespace vgpu::executor::sim {

inline constexpr uint64_t kDmaStreamingMin = 2ull << 20;  // from here on, bypass the caches

void dma_copy(uint8_t* dst, const uint8_t* src, uint64_t size);

}  // namespace vgpu::executor::sim
