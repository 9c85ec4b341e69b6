// The managed-memory entry points: allocation, prefetch, advice, range
// attributes, stream attachment. The coherence itself is managed_memory.cpp.
#include <cstring>

#include "context_objects.h"
#include "driver_state.h"
#include "managed_memory.h"

using namespace vgpu;
using namespace vgpu::driver;

namespace {

// A CUmemLocation as the device ordinal CUDA's older calls use: the device,
// or CU_DEVICE_CPU for host memory.
int ordinal(const CUmemLocation& l) {
  switch (l.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return l.id;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: return CU_DEVICE_CPU;
    default: return CU_DEVICE_INVALID;
  }
}

CUresult prefetch(CUdeviceptr ptr, size_t count, int location, CUstream stream) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (count == 0 || !managed::contains(ptr, count)) return CUDA_ERROR_INVALID_VALUE;
  if (location != 0 && location != CU_DEVICE_CPU) return CUDA_ERROR_INVALID_DEVICE;
  CUresult r = CUDA_SUCCESS;
  if (location == CU_DEVICE_CPU) {
    r = managed::fetch(ptr, count);
  } else {
    // To the device: what the CPU wrote goes now; the CPU's next touch fetches.
    r = managed::flush(stream_handle(stream));
    managed::device_may_write(ptr, count);
  }
  if (r == CUDA_SUCCESS) managed::prefetched(ptr, location);
  return r;
}

CUresult advise(CUdeviceptr ptr, size_t count, CUmem_advise advice, int location) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (count == 0) return CUDA_ERROR_INVALID_VALUE;
  if (location != 0 && location != CU_DEVICE_CPU) return CUDA_ERROR_INVALID_DEVICE;
  return managed::advise(ptr, count, advice, location);
}

CUresult range_attribute(void* data, size_t size, CUmem_range_attribute attr, CUdeviceptr ptr,
                         size_t count) {
  managed::Advice a;
  if (!data || count == 0 || !managed::contains(ptr, count) || !managed::advice(ptr, &a))
    return CUDA_ERROR_INVALID_VALUE;
  auto put = [&](int value) {
    if (size != sizeof(int)) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(data, &value, sizeof value);
    return CUDA_SUCCESS;
  };
  auto type_of = [](int location) {
    return location == CU_DEVICE_CPU       ? CU_MEM_LOCATION_TYPE_HOST
           : location == CU_DEVICE_INVALID ? CU_MEM_LOCATION_TYPE_INVALID
                                           : CU_MEM_LOCATION_TYPE_DEVICE;
  };
  switch (attr) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: return put(a.read_mostly ? 1 : 0);
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION: return put(a.preferred_location);
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION: return put(a.last_prefetch_location);
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE: return put(type_of(a.preferred_location));
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID: return put(a.preferred_location);
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
      return put(type_of(a.last_prefetch_location));
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID: return put(a.last_prefetch_location);
    case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
      // An array of devices, CU_DEVICE_INVALID after the last.
      if (size % sizeof(int) != 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
      auto* out = static_cast<int*>(data);
      for (size_t i = 0; i < size / sizeof(int); ++i) out[i] = CU_DEVICE_INVALID;
      if (a.accessed_by_device) out[0] = 0;
      return CUDA_SUCCESS;
    }
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace

extern "C" {

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t size, unsigned flags) {
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (CUresult r = managed::allocate(size, dptr); r != CUDA_SUCCESS) return r;
  owned::add(owned::Kind::kDeviceMemory, *dptr);
  return CUDA_SUCCESS;
}

CUresult cuMemPrefetchAsync(CUdeviceptr ptr, size_t count, CUdevice device, CUstream stream) {
  return prefetch(ptr, count, device, stream);
}

CUresult cuMemPrefetchAsync_v2(CUdeviceptr ptr, size_t count, CUmemLocation location,
                               unsigned flags, CUstream stream) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return prefetch(ptr, count, ordinal(location), stream);
}

CUresult cuMemAdvise(CUdeviceptr ptr, size_t count, CUmem_advise advice, CUdevice device) {
  return advise(ptr, count, advice, device);
}

CUresult cuMemAdvise_v2(CUdeviceptr ptr, size_t count, CUmem_advise advice, CUmemLocation location) {
  return advise(ptr, count, advice, ordinal(location));
}

CUresult cuMemRangeGetAttribute(void* data, size_t size, CUmem_range_attribute attr,
                                CUdeviceptr ptr, size_t count) {
  return range_attribute(data, size, attr, ptr, count);
}

CUresult cuMemRangeGetAttributes(void** data, size_t* sizes, CUmem_range_attribute* attrs,
                                 size_t n, CUdeviceptr ptr, size_t count) {
  if (!data || !sizes || !attrs || n == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; ++i) {
    if (CUresult r = range_attribute(data[i], sizes[i], attrs[i], ptr, count); r != CUDA_SUCCESS)
      return r;
  }
  return CUDA_SUCCESS;
}

// Attaching to a stream narrows which work may touch a range; with one
// device and every granule tracked, any attachment gives the same bytes.
CUresult cuStreamAttachMemAsync(CUstream, CUdeviceptr ptr, size_t length, unsigned flags) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
    return CUDA_ERROR_INVALID_VALUE;
  return managed::contains(ptr, length ? length : 1) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
