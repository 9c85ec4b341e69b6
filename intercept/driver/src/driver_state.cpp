#include "driver_state.h"

#include <cstring>

#include "device_output.h"
#include "log.h"

namespace vgpu::driver {

using intercept::log_line;
using intercept::log_once;

CUresult to_cu(Status s) {
  switch (s) {
    case Status::kInvalidConfiguration:
    case Status::kInvalidDevicePointer:
    case Status::kInvalidMemcpyDirection: return CUDA_ERROR_INVALID_VALUE;
    case Status::kInvalidSymbol: return CUDA_ERROR_NOT_FOUND;
    // From a launch: the backend has no code for the kernel (the sim backend
    // no CPU implementation). A lookup by name maps it to NOT_FOUND itself.
    case Status::kInvalidDeviceFunction:
      device_output::expect_report();  // the host says which kernel, on stderr
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    default: return static_cast<CUresult>(s);  // the other codes are the driver's own
  }
}

CUresult refuse(const char* what) {
  log_once(what, "%s is not supported by vgpu; returning CUDA_ERROR_NOT_SUPPORTED", what);
  return CUDA_ERROR_NOT_SUPPORTED;
}

// ---- the device -----------------------------------------------------------------

CUresult device_info(const DeviceInfo** out) {
  static std::mutex mu;
  static DeviceInfo* info = nullptr;  // leaked: asked until exit
  static CUresult failed = CUDA_SUCCESS;
  std::lock_guard lock(mu);
  if (info) {
    *out = info;
    return CUDA_SUCCESS;
  }
  if (failed != CUDA_SUCCESS) return failed;
  Connection& c = Connection::instance();
  Connection::Lock clock(c);
  proto::GetDeviceCountReply count{};
  proto::GetDevicePropertiesReply props{};
  Status s = c.call(proto::GetDeviceCountRequest{}, {}, &count);
  if (ok(s) && count.count > 0) s = c.call(proto::GetDevicePropertiesRequest{0, 0}, {}, &props);
  if (!ok(s) || count.count <= 0) {
    // Like a machine without a GPU; a daemon that went away stays an error.
    return failed = (s == Status::kDevicesUnavailable ? CUDA_ERROR_DEVICE_UNAVAILABLE
                                                        : CUDA_ERROR_NO_DEVICE);
  }
  auto* d = new DeviceInfo;
  d->count = 1;  // one virtual GPU per VM
  std::memcpy(d->name, props.name, sizeof d->name);
  d->name[sizeof d->name - 1] = '\0';
  std::memcpy(d->uuid.bytes, props.uuid, sizeof d->uuid.bytes);
  d->total_mem = props.total_global_mem;
  std::memcpy(d->attributes, props.attributes, sizeof d->attributes);
  // What this guest implements, whatever the GPU behind it can do: managed
  // memory without concurrent CPU access (managed_memory.h), mapped pinned
  // memory on top of it (registered memory too), cooperative launch within one device; no IPC
  // (refused by name).
  d->attributes[CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY] = 1;
  d->attributes[CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS] = 0;
  d->attributes[CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS] = 0;
  d->attributes[CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES] = 0;
  d->attributes[CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST] = 0;
  d->attributes[CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH] = 1;
  d->attributes[CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH] = 0;
  d->attributes[CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY] = 1;
  // Registered memory is mapped at another device address (managed_registered.cpp).
  d->attributes[CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED] = 1;
  d->attributes[CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM] = 0;
  d->attributes[CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED] = 0;
  // Virtual memory management, emulated over device allocations
  // (virtual_memory.cpp): no handles shared with other processes, no
  // compression, no RDMA.
  d->attributes[CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED] = 1;
  d->attributes[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED] = 0;
  d->attributes[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED] = 0;
  d->attributes[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED] = 0;
  d->attributes[CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED] = 0;
  d->attributes[CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED] = 0;
  d->attributes[CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED] = 0;
  info = d;
  *out = info;
  return CUDA_SUCCESS;
}

CUresult check_device(CUdevice d) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  const DeviceInfo* info = nullptr;
  if (CUresult r = device_info(&info); r != CUDA_SUCCESS) return r;
  return d >= 0 && d < info->count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

}  // namespace vgpu::driver
