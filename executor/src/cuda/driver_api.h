// The CUDA driver API as vgpu uses it: a struct of typed function pointers,
// filled at run time from libcuda.so.1 (dlopen + cuGetProcAddress_v2), never
// linked. Nothing else in the cuda backend calls the driver any other way, so a
// test can fill the struct with fakes (tests/unit/cuda_backend/fake_driver/).
//
// Each member's type is taken from the toolkit's own <cuda.h> declaration
// (`decltype(&::cuMemAlloc)`), so a wrong signature does not compile. <cuda.h>
// maps several names to versioned ABIs (cuMemAlloc -> cuMemAlloc_v2); the
// members carry the mapped names too, so `api.cuMemAlloc(...)` calls the
// cuMemAlloc_v2 ABI, and the loader asks the driver for the base name
// ("cuMemAlloc") at the CUDA version the headers describe.
//
// Only the worker process (vgpu-cuda-worker) loads the real driver; the daemon
// never does (see docs/cuda-backend.md).
#pragma once

#include <cuda.h>

#include <string>

namespace vgpu::executor::cuda {

// Every entry point the backend uses. X(name, required): a missing required
// one fails the load with its name; an optional one is left null.
#define VGPU_CUDA_DRIVER_FUNCTIONS(X)  \
  X(cuInit, true)                      \
  X(cuDriverGetVersion, true)          \
  X(cuGetErrorName, true)              \
  X(cuDeviceGet, true)                 \
  X(cuDeviceGetCount, true)            \
  X(cuDeviceGetName, true)             \
  X(cuDeviceGetUuid, true)             \
  X(cuDeviceTotalMem, true)            \
  X(cuDeviceGetAttribute, true)        \
  X(cuDevicePrimaryCtxRetain, true)    \
  X(cuDevicePrimaryCtxRelease, true)   \
  X(cuDevicePrimaryCtxSetFlags, true)  \
  X(cuCtxSetCurrent, true)             \
  X(cuCtxSynchronize, true)            \
  X(cuMemAlloc, true)                  \
  X(cuMemFree, true)                   \
  X(cuMemHostRegister, true)           \
  X(cuMemHostUnregister, true)         \
  X(cuMemcpyHtoDAsync, true)           \
  X(cuMemcpyDtoHAsync, true)           \
  X(cuMemcpyDtoDAsync, true)           \
  X(cuMemcpy2DAsync, true)             \
  X(cuMemsetD8Async, true)             \
  X(cuStreamCreate, true)              \
  X(cuStreamDestroy, true)             \
  X(cuStreamSynchronize, true)         \
  X(cuStreamWaitEvent, true)           \
  X(cuStreamCreateWithPriority, false) \
  X(cuEventCreate, true)               \
  X(cuEventDestroy, true)              \
  X(cuEventRecord, true)               \
  X(cuEventSynchronize, true)          \
  X(cuEventElapsedTime, true)          \
  X(cuModuleLoadData, true)            \
  X(cuModuleUnload, true)              \
  X(cuModuleGetFunction, true)         \
  X(cuModuleGetGlobal, true)           \
  X(cuFuncGetAttribute, true)          \
  X(cuFuncGetParamInfo, false)         \
  X(cuLaunchKernel, true)              \
  X(cuLaunchKernelEx, false)           \
  X(cuFuncSetAttribute, false)         \
  X(cuTexObjectCreate, false)          \
  X(cuTexObjectDestroy, false)         \
  X(cuCtxSetLimit, false)

struct DriverApi {
#define VGPU_CUDA_DECLARE(name, required) decltype(&::name) name = nullptr;
  VGPU_CUDA_DRIVER_FUNCTIONS(VGPU_CUDA_DECLARE)
#undef VGPU_CUDA_DECLARE
};

// The oldest driver the backend accepts: 12.4 added cuFuncGetParamInfo, and
// every other entry point above has had its current ABI since then.
inline constexpr int kMinDriverVersion = 12040;

// Opens `library` (normally "libcuda.so.1") and fills *api. On failure *why
// says what is missing ("libcuda.so.1: cannot open shared object file",
// "the driver has no entry point cuMemAlloc") and *api is left empty. The
// library stays loaded for the life of the process.
enum class LoadError { kNone, kNoLibrary, kNoEntryPoint, kDriverTooOld };
LoadError load_driver(const std::string& library, DriverApi* api, std::string* why);

// "CUDA_ERROR_ILLEGAL_ADDRESS", or "CUresult <n>" when the driver has no name.
std::string error_name(const DriverApi& api, CUresult r);

}  // namespace vgpu::executor::cuda
