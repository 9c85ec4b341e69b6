// cuInit, versions, the profiler calls, and where every refused entry point
// ends (the generated stubs call vgpu_driver_not_supported).
#include <cudaProfiler.h>

#include <atomic>

#include "driver_state.h"
#include "log.h"

namespace vgpu::driver {

namespace {
std::atomic<bool> init_done{false};
}  // namespace

bool initialized() { return init_done.load(std::memory_order_acquire); }

}  // namespace vgpu::driver

using namespace vgpu;
using namespace vgpu::driver;

extern "C" {

// Connects to the host and fetches the device's description: a machine whose
// vgpud cannot be reached looks like one without a GPU (CUDA_ERROR_NO_DEVICE).
CUresult cuInit(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const DeviceInfo* info = nullptr;
  if (CUresult r = device_info(&info); r != CUDA_SUCCESS) return r;
  init_done.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = kDriverVersion;
  return CUDA_SUCCESS;
}

// The profiler is the host's business: a program's start/stop marks are
// accepted and change nothing (so programs that check them run).
CUresult cuProfilerInitialize(const char*, const char*, CUoutput_mode) { return CUDA_SUCCESS; }
CUresult cuProfilerStart(void) { return CUDA_SUCCESS; }
CUresult cuProfilerStop(void) { return CUDA_SUCCESS; }

int vgpu_driver_not_supported(const char* name) {
  return static_cast<int>(refuse(name));
}

}  // extern "C"
