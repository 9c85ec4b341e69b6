// CPU implementations of the kernels that reach vgpu through the driver API
// alone: driver_kernels.cu (loaded by driver_api from a file) and the one
// nvrtc_program compiles at run time. extern "C": plain device names.
#include <cmath>

#include "kernel_support.h"

using namespace vgpu_test_kernels;

// __device__ float offset;
// __global__ void scale_offset(const float* x, float* y, float a, int n) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) y[i] = a * x[i] + offset;
// }
VGPU_SIM_KERNEL(scale_offset) {
  const float* x;
  float* y;
  float a;
  int n;
  if (!read_params(launch, x, y, a, n)) return kBadParams;
  const float* offset = symbol<const float>(launch, "offset");
  if (offset == nullptr) return kUnknownSymbol;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n) y[i] = std::fma(a, x[i], *offset);
  });
  return 0;
}

// nvrtc_program.cpp compiles this at run time with NVRTC:
// extern "C" __global__ void nvrtc_square_plus(const int* in, int* out, int add, int n) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) out[i] = in[i] * in[i] + add;
// }
VGPU_SIM_KERNEL(nvrtc_square_plus) {
  const int* in;
  int* out;
  int add;
  int n;
  if (!read_params(launch, in, out, add, n)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n) out[i] = in[i] * in[i] + add;
  });
  return 0;
}
