// Registration entry points nvcc's generated code calls from static
// constructors, before main: recorded only, no connection needed.
#include <vector>

#include "api.h"
#include "log.h"
#include "registry.h"

using namespace vgpu;
using namespace vgpu::intercept;

namespace {

// A launch's configuration, pushed by <<<...>>> and popped by the stub.
struct CallConfig {
  dim3 grid, block;
  size_t shared_mem;
  void* stream;
};
thread_local std::vector<CallConfig> call_configs;

ModuleRec* module_of(void** handle) { return reinterpret_cast<ModuleRec*>(handle); }

}  // namespace

extern "C" {

void** __cudaRegisterFatBinary(void* fatCubin) {
  return reinterpret_cast<void**>(Registry::instance().add_module(fatCubin));
}

void __cudaRegisterFatBinaryEnd(void**) {}

// At exit the host releases everything the process held when its channel closes.
void __cudaUnregisterFatBinary(void**) {}

char __cudaInitModule(void**) { return 1; }

void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                            const char*, int, uint3*, uint3*, dim3*, dim3*, int*) {
  Registry::instance().add_kernel(module_of(fatCubinHandle), hostFun, deviceFun);
}

void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char* deviceAddress, const char*,
                       int, size_t size, int constant, int) {
  Registry::instance().add_var(module_of(fatCubinHandle), hostVar, deviceAddress, size,
                               constant != 0);
}

void __cudaRegisterManagedVar(void**, void**, char*, const char* deviceName, int, size_t, int, int) {
  log_line("managed variable %s: managed memory is not supported by vgpu", deviceName);
}

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st* stream) {
  call_configs.push_back({gridDim, blockDim, sharedMem, stream});
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem,
                                       void* stream) {
  if (call_configs.empty()) return result(Status::kInvalidConfiguration);
  const CallConfig c = call_configs.back();
  call_configs.pop_back();
  *gridDim = c.grid;
  *blockDim = c.block;
  *sharedMem = c.shared_mem;
  *static_cast<void**>(stream) = c.stream;
  return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  KernelRec* k = Registry::instance().kernel_by_host_fun(hostFun);
  if (!k) return result(Status::kInvalidDeviceFunction);
  *kernel = reinterpret_cast<cudaKernel_t>(k);
  return cudaSuccess;
}

}  // extern "C"
