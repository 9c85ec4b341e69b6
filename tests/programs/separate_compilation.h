// What the two objects of separate_compilation share.
#pragma once

#include <cuda_runtime.h>

// Defined in separate_compilation_lib.cu; used from separate_compilation.cu.
extern __device__ int lib_counter;
__device__ float lib_scale(float x, float factor);
__device__ void lib_count_one();
__global__ void lib_add_offset(float* data, int n, float offset);

// Instantiated in both objects (one copy each; the linker keeps one).
template <typename T>
__host__ __device__ inline T twice(T x) { return x + x; }
