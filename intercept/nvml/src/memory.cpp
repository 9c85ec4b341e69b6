// The device memory a VM sees is its tenant's: the total is the tenant's cap
// (or the card's memory when it has none), used is what the tenant holds.
// Asked of vgpud at each call, since it changes.
#include <unistd.h>

#include "connection.h"
#include "nvml_api.h"
#include "nvml_state.h"

using vgpu::Status;
using vgpu::nvml::check_device;
using vgpu::nvml::to_nvml;

namespace {

struct TenantMemory {
  unsigned long long total = 0, free = 0, used = 0;
};

nvmlReturn_t tenant_memory(TenantMemory* m) {
  using vgpu::intercept::Connection;
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  vgpu::proto::MemGetInfoReply rep{};
  if (Status s = c.call(vgpu::proto::MemGetInfoRequest{}, {}, &rep); !ok(s)) return to_nvml(s);
  m->total = rep.total;
  m->free = rep.free < rep.total ? rep.free : rep.total;
  m->used = m->total - m->free;
  return NVML_SUCCESS;
}

// The processes NVML can name in a VM: the host does not tell one process's
// memory from another's in the same VM, so the list is the caller itself,
// holding what the tenant holds.
template <class Info>
nvmlReturn_t running_processes(nvmlDevice_t device, unsigned int* count, Info* infos) {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  if (*count < 1) {  // asking how many: infos may be NULL
    *count = 1;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (!infos) return NVML_ERROR_INVALID_ARGUMENT;
  TenantMemory m;
  if (nvmlReturn_t r = tenant_memory(&m); r != NVML_SUCCESS) return r;
  Info info{};
  info.pid = static_cast<unsigned>(getpid());
  info.usedGpuMemory = m.used;
  if constexpr (requires { info.gpuInstanceId; }) {
    info.gpuInstanceId = 0xFFFFFFFFu;  // no MIG
    info.computeInstanceId = 0xFFFFFFFFu;
  }
  infos[0] = info;
  *count = 1;
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) noexcept {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
  TenantMemory m;
  if (nvmlReturn_t r = tenant_memory(&m); r != NVML_SUCCESS) return r;
  memory->total = m.total;
  memory->free = m.free;
  memory->used = m.used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) noexcept {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  TenantMemory m;
  if (nvmlReturn_t r = tenant_memory(&m); r != NVML_SUCCESS) return r;
  memory->total = m.total;
  memory->reserved = 0;  // what the host's driver keeps is outside every tenant's cap
  memory->free = m.free;
  memory->used = m.used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) noexcept {
  return running_processes(device, infoCount, infos);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v2_t* infos) noexcept {
  return running_processes(device, infoCount, infos);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                  nvmlProcessInfo_v1_t* infos) noexcept {
  return running_processes(device, infoCount, infos);
}

}  // extern "C"
