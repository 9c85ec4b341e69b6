// CPU implementations of the test programs' kernels, for the sim backend
// (plug-in ABI: vgpu/sim_kernel.h). One function per kernel, named after its
// mangled device name; each transcribes its CUDA kernel, quoted above it.
//
// Deliberately absent: _Z13not_in_pluginPii (error_paths.cu), so the sim
// backend's "no implementation" path can be tested.
//
// nvcc contracts a * b + c into a fused multiply-add by default (--fmad=true);
// the implementations use std::fma where the GPU does.
//
// struct_kernels.cpp: struct_param.cu. symbol_kernels.cpp: constant_memory.cu.
#include <cmath>

#include "kernel_support.h"

using namespace vgpu_test_kernels;
using u64 = unsigned long long;

// saxpy.cu
// __global__ void saxpy(float a, const float* x, float* y, int n) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) y[i] = a * x[i] + y[i];
// }
VGPU_SIM_KERNEL(_Z5saxpyfPKfPfi) {
  float a;
  const float* x;
  float* y;
  int n;
  if (!read_params(launch, a, x, y, n)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n) y[i] = std::fma(a, x[i], y[i]);
  });
  return 0;
}

// vector_add.cu
// __global__ void vector_add(const float* a, const float* b, float* c, int n) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) c[i] = a[i] + b[i];
// }
VGPU_SIM_KERNEL(_Z10vector_addPKfS0_Pfi) {
  const float* a;
  const float* b;
  float* c;
  int n;
  if (!read_params(launch, a, b, c, n)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
  });
  return 0;
}

// __global__ void vector_add_2d(const float* a, const float* b, float* c, int width, int height) {
//   int x = blockIdx.x * blockDim.x + threadIdx.x;
//   int y = blockIdx.y * blockDim.y + threadIdx.y;
//   if (x < width && y < height) c[y * width + x] = a[y * width + x] + b[y * width + x];
// }
VGPU_SIM_KERNEL(_Z13vector_add_2dPKfS0_Pfii) {
  const float* a;
  const float* b;
  float* c;
  int width, height;
  if (!read_params(launch, a, b, c, width, height)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int x = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    int y = t.blockIdx.y * t.blockDim.y + t.threadIdx.y;
    if (x < width && y < height) c[y * width + x] = a[y * width + x] + b[y * width + x];
  });
  return 0;
}

// streams_events.cu
// __global__ void scale_add(float* data, float scale, float offset, int n) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) data[i] = data[i] * scale + offset;
// }
VGPU_SIM_KERNEL(_Z9scale_addPfffi) {
  float* data;
  float scale, offset;
  int n;
  if (!read_params(launch, data, scale, offset, n)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n) data[i] = std::fma(data[i], scale, offset);
  });
  return 0;
}

// __global__ void add_into(const float* src, float* dst, int n) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) dst[i] += src[i];
// }
VGPU_SIM_KERNEL(_Z8add_intoPKfPfi) {
  const float* src;
  float* dst;
  int n;
  if (!read_params(launch, src, dst, n)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n) dst[i] += src[i];
  });
  return 0;
}

// error_paths.cu
// __global__ void fill(int* p, int value, int n) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) p[i] = value;
// }
VGPU_SIM_KERNEL(_Z4fillPiii) {
  int* p;
  int value, n;
  if (!read_params(launch, p, value, n)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n) p[i] = value;
  });
  return 0;
}

// cross_tenant.cu
// __global__ void steal(const u64* src, u64* dst, u64 n) {
//   u64 i = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x;
//   if (i < n) dst[i] = src[i];
// }
// A pointer into another tenant's memory is not mapped in the worker process
// that runs this: the read faults there, and the launch fails.
VGPU_SIM_KERNEL(_Z5stealPKyPyy) {
  const u64* src;
  u64* dst;
  u64 n;
  if (!read_params(launch, src, dst, n)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    u64 i = static_cast<u64>(t.blockIdx.x) * t.blockDim.x + t.threadIdx.x;
    if (i < n) dst[i] = src[i];
  });
  return 0;
}

// busy.cu
// __global__ void spin(unsigned long long ns): busy-waits on %globaltimer
// until ns have passed. No effect on memory; every thread waits the same ns
// at the same time, so the kernel takes ns whatever the grid.
VGPU_SIM_KERNEL(_Z4spiny) {
  unsigned long long ns;
  if (!read_params(launch, ns)) return kBadParams;
  launch->modeled_ns = ns;
  return 0;
}

// static_runtime.cu (refused by the launcher, implemented for completeness)
// __global__ void square(int* p, int n) {
//   int i = blockIdx.x * blockDim.x + threadIdx.x;
//   if (i < n) p[i] = p[i] * p[i];
// }
VGPU_SIM_KERNEL(_Z6squarePii) {
  int* p;
  int n;
  if (!read_params(launch, p, n)) return kBadParams;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    // The GPU wraps on overflow; signed overflow is undefined in C++.
    if (i < n) p[i] = static_cast<int>(static_cast<unsigned>(p[i]) * static_cast<unsigned>(p[i]));
  });
  return 0;
}
