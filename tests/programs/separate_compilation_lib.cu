// The second object of separate_compilation: device functions, a __device__ variable and a
// kernel the first object uses.
#include <cstdio>

#include "separate_compilation.h"

__device__ int lib_counter;

__device__ float lib_scale(float x, float factor) { return x * factor; }

__device__ void lib_count_one() { atomicAdd(&lib_counter, 1); }

__global__ void lib_add_offset(float* data, int n, float offset) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += twice(offset) / 2;
  if (i == 0) printf("object 2: offset %.1f\n", offset);
}
