// What the CPU implementations of the test programs' kernels share: reading
// the packed parameter buffer, and running a kernel body once per thread of
// the launch's grid, with blockIdx/threadIdx/blockDim/gridDim as CUDA has them.
//
// Each implementation is written as a transcription of its CUDA kernel: the
// same parameter list (read_params), the same body in the per-thread lambda,
// the same bounds checks and the same integer types.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "vgpu/sim_kernel.h"

// Defines the exported entry point for a kernel, by its mangled device name:
//   VGPU_SIM_KERNEL(_Z5saxpyfPKfPfi) { ... uses `launch` ... }
#define VGPU_SIM_KERNEL(mangled)                                             \
  extern "C" __attribute__((visibility("default"))) int vgpu_sim_##mangled( \
      struct vgpu_sim_launch* launch)

namespace vgpu_test_kernels {

// Launch failures an implementation reports (any nonzero value fails the launch).
inline constexpr int kBadParams = 1;      // buffer missing or shorter than the parameters
inline constexpr int kUnknownSymbol = 2;  // a __device__/__constant__ variable not found

// Offsets of a kernel's parameters in the packed buffer: in declaration
// order, each at the next multiple of its alignment (what the cubin's
// .nv.info records for scalars, pointers and structs; the unit test packs
// buffers from the cubin's own metadata to hold this to it).
template <typename... Ts>
struct ParamLayout {
  static constexpr std::array<size_t, sizeof...(Ts)> offsets = [] {
    std::array<size_t, sizeof...(Ts)> o{};
    size_t end = 0, k = 0;
    ((end = (end + alignof(Ts) - 1) / alignof(Ts) * alignof(Ts), o[k++] = end, end += sizeof(Ts)),
     ...);
    return o;
  }();
  // End of the last parameter: the buffer's size (no padding after it).
  static constexpr size_t size = [] {
    size_t end = 0;
    ((end = (end + alignof(Ts) - 1) / alignof(Ts) * alignof(Ts) + sizeof(Ts)), ...);
    return end;
  }();
};

// Reads all parameters of a kernel, in declaration order, into `out...`.
// False if the buffer is shorter than the layout needs.
template <typename... Ts>
bool read_params(const vgpu_sim_launch* launch, Ts&... out) {
  static_assert((std::is_trivially_copyable_v<Ts> && ...));
  using Layout = ParamLayout<Ts...>;
  if (launch == nullptr || (Layout::size > 0 && launch->params == nullptr) ||
      launch->params_size < Layout::size)
    return false;
  const auto* base = static_cast<const unsigned char*>(launch->params);
  size_t k = 0;
  ((std::memcpy(&out, base + Layout::offsets[k++], sizeof(Ts))), ...);
  return true;
}

// A device variable of the launching tenant, by its device (cubin symbol) name.
template <typename T>
T* symbol(const vgpu_sim_launch* launch, const char* device_name) {
  if (launch->symbol_address == nullptr) return nullptr;
  return static_cast<T*>(launch->symbol_address(launch, device_name));
}

struct Dim3 {
  unsigned x, y, z;
};

struct Thread {
  Dim3 blockIdx, threadIdx, blockDim, gridDim;
};

// Runs body(thread) for every thread of every block. The test kernels have no
// shared memory and no __syncthreads, so running threads one after another
// gives what the GPU gives.
template <typename Body>
void for_each_thread(const vgpu_sim_launch* launch, Body&& body) {
  Thread t{};
  t.gridDim = {launch->grid[0], launch->grid[1], launch->grid[2]};
  t.blockDim = {launch->block[0], launch->block[1], launch->block[2]};
  for (t.blockIdx.z = 0; t.blockIdx.z < t.gridDim.z; ++t.blockIdx.z)
    for (t.blockIdx.y = 0; t.blockIdx.y < t.gridDim.y; ++t.blockIdx.y)
      for (t.blockIdx.x = 0; t.blockIdx.x < t.gridDim.x; ++t.blockIdx.x)
        for (t.threadIdx.z = 0; t.threadIdx.z < t.blockDim.z; ++t.threadIdx.z)
          for (t.threadIdx.y = 0; t.threadIdx.y < t.blockDim.y; ++t.threadIdx.y)
            for (t.threadIdx.x = 0; t.threadIdx.x < t.blockDim.x; ++t.threadIdx.x) body(t);
}

// A block's rank in its thread block cluster, and the cluster's block count
// (vgpu_sim_launch version 5), as cg::this_cluster() gives them.
inline unsigned cluster_rank(const vgpu_sim_launch* launch, const Thread& t) {
  const unsigned* c = launch->cluster;
  return t.blockIdx.x % c[0] + (t.blockIdx.y % c[1]) * c[0] + (t.blockIdx.z % c[2]) * c[0] * c[1];
}
inline unsigned cluster_blocks(const vgpu_sim_launch* launch) {
  return launch->cluster[0] * launch->cluster[1] * launch->cluster[2];
}

}  // namespace vgpu_test_kernels
