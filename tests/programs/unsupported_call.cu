// A runtime call vgpu does not forward (memory shared between processes by
// IPC: a VM has one process's view of its GPU) must fail cleanly with
// cudaErrorNotSupported, never crash or pretend to succeed, and the program
// must be able to go on. vgpu-specific: natively cudaIpcGetMemHandle succeeds.
#include "common.h"

int main() {
  vt::set_name("unsupported_call");
  void* p = nullptr;
  vt::check(cudaMalloc(&p, 1024) == cudaSuccess && p != nullptr, "cudaMalloc works");
  cudaIpcMemHandle_t handle;
  const cudaError_t e = cudaIpcGetMemHandle(&handle, p);
  vt::check(e == cudaErrorNotSupported, "cudaIpcGetMemHandle -> %s (want cudaErrorNotSupported)",
            cudaGetErrorName(e));
  const cudaError_t last = cudaGetLastError();
  vt::check(last == cudaErrorNotSupported, "cudaGetLastError -> %s", cudaGetErrorName(last));
  vt::check(cudaGetLastError() == cudaSuccess, "the error is cleared once read");
  void* q = nullptr;
  vt::check(cudaMalloc(&q, 1024) == cudaSuccess && q != nullptr, "cudaMalloc still works");
  vt::check(cudaFree(q) == cudaSuccess && cudaFree(p) == cudaSuccess, "cudaFree still works");
  vt::pass();
}
