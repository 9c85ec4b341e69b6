// FAKE CUDA DRIVER as a shared library, for tests only: what a real
// vgpu-cuda-worker loads as its "libcuda.so.1" in the backend's tests. It
// exports what the worker's loader looks for (cuDriverGetVersion,
// cuGetProcAddress_v2) over the fake of fake_cuda.cpp; knobs come from the
// VGPU_FAKE_CUDA_* environment variables (fake_cuda.h).
#include "fake_cuda.h"

#include <cstdlib>
#include <cstring>

namespace {

void configure() {
  static const bool done = [] {
    vgpu::test::fake_cuda::reset(vgpu::test::fake_cuda::knobs_from_env());
    return true;
  }();
  (void)done;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* version) {
  configure();
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = vgpu::test::fake_cuda::knobs_from_env().driver_version;
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int, cuuint64_t, CUdriverProcAddressQueryResult* status) {
  configure();
  if (!pfn) return CUDA_ERROR_INVALID_VALUE;
  const char* missing = std::getenv("VGPU_FAKE_CUDA_MISSING");  // read each time: tests change it
  *pfn = missing && symbol && std::strcmp(missing, symbol) == 0
             ? nullptr
             : vgpu::test::fake_cuda::lookup(symbol);
  if (status) *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // extern "C"
