// System-wide versions. The guest sees vgpu, not the host's NVIDIA driver:
// the "driver" a VM talks to is vgpud, whose version is vgpu's; the CUDA
// driver version is the one the guest libcuda.so.1 reports (cuda.h's
// CUDA_VERSION), so NVML and cuDriverGetVersion agree.
#include <cuda.h>

#include <string>

#include "nvml_api.h"
#include "nvml_state.h"

using vgpu::nvml::check_init;
using vgpu::nvml::copy_string;

extern "C" {

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) noexcept {
  if (nvmlReturn_t r = check_init(); r != NVML_SUCCESS) return r;
  return copy_string(VGPU_VERSION, version, length);
}

// NVIDIA's form: the CUDA major version, then the driver's version.
nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) noexcept {
  static const std::string v = std::to_string(CUDA_VERSION / 1000) + "." VGPU_VERSION;
  return copy_string(v, version, length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) noexcept {
  if (!cudaDriverVersion) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = CUDA_VERSION;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) noexcept {
  return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

}  // extern "C"
