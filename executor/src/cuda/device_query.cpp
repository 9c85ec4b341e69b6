#include "device_query.h"

#include <driver_types.h>  // cudaDeviceAttr, for the compile-time checks only

#include <algorithm>
#include <cstring>

namespace vgpu::executor::cuda {
namespace {

// The runtime's attribute numbers are the driver's; the daemon's table is
// indexed by the runtime's, so it can be filled by number.
#define VGPU_SAME(cu, rt) static_assert(static_cast<int>(cu) == static_cast<int>(rt), #cu);
VGPU_SAME(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, cudaDevAttrMaxThreadsPerBlock)
VGPU_SAME(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, cudaDevAttrMaxGridDimZ)
VGPU_SAME(CU_DEVICE_ATTRIBUTE_WARP_SIZE, cudaDevAttrWarpSize)
VGPU_SAME(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, cudaDevAttrMultiProcessorCount)
VGPU_SAME(CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, cudaDevAttrKernelExecTimeout)
VGPU_SAME(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cudaDevAttrComputeCapabilityMajor)
VGPU_SAME(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cudaDevAttrComputeCapabilityMinor)
VGPU_SAME(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
          cudaDevAttrMaxSharedMemoryPerBlockOptin)
VGPU_SAME(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, cudaDevAttrMemoryPoolsSupported)
VGPU_SAME(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, cudaDevAttrClusterLaunch)
VGPU_SAME(CU_DEVICE_ATTRIBUTE_MPS_ENABLED, cudaDevAttrMpsEnabled)
VGPU_SAME(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, cudaDevAttrHostNumaId)
#undef VGPU_SAME
static_assert(static_cast<int>(cudaDevAttrMax) <= wire::kAttributeCount);

}  // namespace

CUresult query_device(const DriverApi& api, int device_ordinal, wire::DeviceReport* out,
                      std::string* why) {
  *out = wire::DeviceReport{};
  CUdevice dev = 0;
  if (CUresult r = api.cuDeviceGet(&dev, device_ordinal); r != CUDA_SUCCESS) {
    *why = "cuDeviceGet(" + std::to_string(device_ordinal) + "): " + error_name(api, r);
    return r;
  }
  if (CUresult r = api.cuDeviceGetName(out->name, sizeof out->name - 1, dev); r != CUDA_SUCCESS) {
    *why = "cuDeviceGetName: " + error_name(api, r);
    return r;
  }
  CUuuid uuid{};
  if (CUresult r = api.cuDeviceGetUuid(&uuid, dev); r != CUDA_SUCCESS) {
    *why = "cuDeviceGetUuid: " + error_name(api, r);
    return r;
  }
  static_assert(sizeof uuid.bytes == sizeof out->uuid);
  std::memcpy(out->uuid, uuid.bytes, sizeof out->uuid);
  size_t total = 0;
  if (CUresult r = api.cuDeviceTotalMem(&total, dev); r != CUDA_SUCCESS) {
    *why = "cuDeviceTotalMem: " + error_name(api, r);
    return r;
  }
  out->total_memory = total;
  api.cuDriverGetVersion(&out->driver_version);
  const int last = std::min(static_cast<int>(CU_DEVICE_ATTRIBUTE_MAX), wire::kAttributeCount);
  for (int a = 1; a < last; ++a) {
    int v = 0;
    if (api.cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(a), dev) == CUDA_SUCCESS) {
      out->attributes[a] = v;
    }
  }
  return CUDA_SUCCESS;
}

}  // namespace vgpu::executor::cuda
