// assert_program: a device assert that fails, as students meet it. The
// message CUDA prints (file, line, function, block, thread, expression) must
// reach this program's stderr, and the context is lost: the synchronising
// call and every CUDA call after it return cudaErrorAssert.
#undef NDEBUG  // the assert is the point, in every build type
#include <cassert>

#include "common.h"

__global__ void check_small(const int* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) assert(v[i] < 100);
}

int main() {
  vt::set_name("assert_program");
  const int n = 16;
  int host[n];
  for (int i = 0; i < n; ++i) host[i] = i * 10;  // from i = 10 on, 100 or more
  int* dev = nullptr;
  CUDA_OK(cudaMalloc(&dev, sizeof host));
  CUDA_OK(cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice));
  check_small<<<2, 8>>>(dev, n);
  const cudaError_t e = cudaDeviceSynchronize();
  vt::check(e == cudaErrorAssert, "cudaDeviceSynchronize -> %s (want cudaErrorAssert)", cudaGetErrorName(e));
  void* more = nullptr;
  const cudaError_t after = cudaMalloc(&more, 64);
  vt::check(after == cudaErrorAssert, "the context is lost: cudaMalloc -> %s", cudaGetErrorName(after));
  vt::pass();
}
