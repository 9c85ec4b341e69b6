#include "api.h"

#include "log.h"

namespace vgpu::intercept {

namespace {
thread_local cudaError_t last_error = cudaSuccess;
}  // namespace

cudaError_t result(Status s) {
  const auto e = static_cast<cudaError_t>(s);
  if (e != cudaSuccess) last_error = e;
  return e;
}

uint64_t stream_handle(cudaStream_t s) {
  if (s == cudaStreamLegacy || s == cudaStreamPerThread) return 0;
  return reinterpret_cast<uint64_t>(s);
}

}  // namespace vgpu::intercept

extern "C" {

cudaError_t cudaGetLastError(void) {
  const cudaError_t e = vgpu::intercept::last_error;
  vgpu::intercept::last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) { return vgpu::intercept::last_error; }

// Unforwarded exports (generated weak stubs) end here.
int vgpu_not_supported(const char* name) {
  vgpu::intercept::log_once(name, "%s is not supported by vgpu; returning cudaErrorNotSupported",
                            name);
  return vgpu::intercept::result(vgpu::Status::kNotSupported);
}

}  // extern "C"
