// A runtime call vgpu does not forward (CUDA graphs) must fail cleanly with
// cudaErrorNotSupported, never crash or pretend to succeed, and the program
// must be able to go on. vgpu-specific: natively cudaGraphCreate succeeds.
#include "common.h"

int main() {
  vt::set_name("unsupported_call");
  cudaGraph_t graph = nullptr;
  const cudaError_t e = cudaGraphCreate(&graph, 0);
  vt::check(e == cudaErrorNotSupported, "cudaGraphCreate -> %s (want cudaErrorNotSupported)",
            cudaGetErrorName(e));
  const cudaError_t last = cudaGetLastError();
  vt::check(last == cudaErrorNotSupported, "cudaGetLastError -> %s", cudaGetErrorName(last));
  vt::check(cudaGetLastError() == cudaSuccess, "the error is cleared once read");
  void* p = nullptr;
  vt::check(cudaMalloc(&p, 1024) == cudaSuccess && p != nullptr, "cudaMalloc still works");
  vt::check(cudaFree(p) == cudaSuccess, "cudaFree still works");
  vt::pass();
}
