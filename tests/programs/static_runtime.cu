// static_runtime: an ordinary program built with nvcc's default static CUDA
// runtime (no NEEDED libcudart.so.13). NVIDIA's runtime inside it runs over
// vgpu's guest driver (libcuda.so.1); the older runtime shim (vgpu-run
// --runtime shim) cannot replace it, and the launcher refuses it there with a
// clear message. On a GPU, without vgpu, it runs and passes.
#include <vector>

#include "common.h"

__global__ void square(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * p[i];
}

int main() {
  vt::set_name("static_runtime");
  const int n = 1000;
  std::vector<int> h(n);
  for (int i = 0; i < n; ++i) h[i] = i - 500;
  int* d = nullptr;
  CUDA_OK(cudaMalloc(&d, n * sizeof(int)));
  CUDA_OK(cudaMemcpy(d, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  square<<<(n + 127) / 128, 128>>>(d, n);
  LAUNCH_OK();
  CUDA_OK(cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    if (h[i] != (i - 500) * (i - 500)) vt::fail("square: p[%d] = %d", i, h[i]);
  vt::check(true, "square correct for %d elements", n);
  CUDA_OK(cudaFree(d));
  vt::pass();
}
