// Device queries, answered in the guest from the description fetched once
// (driver_state.h): NVIDIA's runtime asks for about a hundred attributes at
// start, and none of them can change while the process runs.
#include <cstdio>
#include <cstring>

#include "driver_state.h"
#include "vgpu/protocol/device_capabilities.h"
#include "vgpu/executor/texture.h"

using namespace vgpu;
using namespace vgpu::driver;

namespace {

CUresult info_for(CUdevice dev, const DeviceInfo** info) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  return device_info(info);
}

}  // namespace

extern "C" {

CUresult cuDeviceGetCount(int* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  const DeviceInfo* info = nullptr;
  if (CUresult r = device_info(&info); r != CUDA_SUCCESS) return r;
  *count = info->count;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(ordinal); r != CUDA_SUCCESS) return r;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  const DeviceInfo* info = nullptr;
  if (CUresult r = info_for(dev, &info); r != CUDA_SUCCESS) return r;
  std::snprintf(name, static_cast<size_t>(len), "%s", info->name);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  const DeviceInfo* info = nullptr;
  if (CUresult r = info_for(dev, &info); r != CUDA_SUCCESS) return r;
  *uuid = info->uuid;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

// The tenant's memory cap, not the card's size.
CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  const DeviceInfo* info = nullptr;
  if (CUresult r = info_for(dev, &info); r != CUDA_SUCCESS) return r;
  *bytes = info->total_mem;
  return CUDA_SUCCESS;
}

static_assert(CU_DEVICE_ATTRIBUTE_MAX <= proto::kCapabilitiesAttribute,
              "a CUDA attribute would read vgpu's capability bits");

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attr, CUdevice dev) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  const DeviceInfo* info = nullptr;
  if (CUresult r = info_for(dev, &info); r != CUDA_SUCCESS) return r;
  if (attr <= 0 || attr >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  *value = info->attribute(attr);
  return CUDA_SUCCESS;
}

// The widest 1D texture over linear memory: the device's limit, for any
// format a texture can have (textures.cpp).
CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t* width, CUarray_format format, unsigned channels,
                                            CUdevice dev) {
  if (!width) return CUDA_ERROR_INVALID_VALUE;
  const DeviceInfo* info = nullptr;
  if (CUresult r = info_for(dev, &info); r != CUDA_SUCCESS) return r;
  executor::TextureDesc d;
  d.format = static_cast<executor::TextureDesc::Format>(format);
  d.channels = channels;
  if (executor::element_bytes(d) == 0) return CUDA_ERROR_INVALID_VALUE;
  const int limit = info->attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH);
  *width = limit > 0 ? static_cast<size_t>(limit) : size_t{1} << 27;
  return CUDA_SUCCESS;
}

CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  if (!major || !minor) return CUDA_ERROR_INVALID_VALUE;
  const DeviceInfo* info = nullptr;
  if (CUresult r = info_for(dev, &info); r != CUDA_SUCCESS) return r;
  *major = info->attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  *minor = info->attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetProperties(CUdevprop* p, CUdevice dev) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  const DeviceInfo* info = nullptr;
  if (CUresult r = info_for(dev, &info); r != CUDA_SUCCESS) return r;
  auto a = [info](CUdevice_attribute x) { return info->attribute(x); };
  p->maxThreadsPerBlock = a(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  p->maxThreadsDim[0] = a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  p->maxThreadsDim[1] = a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  p->maxThreadsDim[2] = a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  p->maxGridSize[0] = a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  p->maxGridSize[1] = a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  p->maxGridSize[2] = a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  p->sharedMemPerBlock = a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  p->totalConstantMemory = a(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY);
  p->SIMDWidth = a(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  p->memPitch = a(CU_DEVICE_ATTRIBUTE_MAX_PITCH);
  p->regsPerBlock = a(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  p->clockRate = a(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  p->textureAlign = a(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* bus_id, int len, CUdevice dev) {
  if (!bus_id || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  const DeviceInfo* info = nullptr;
  if (CUresult r = info_for(dev, &info); r != CUDA_SUCCESS) return r;
  std::snprintf(bus_id, static_cast<size_t>(len), "%08x:%02x:%02x.0",
                info->attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
                info->attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
                info->attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID));
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* bus_id) {
  if (!dev || !bus_id) return CUDA_ERROR_INVALID_VALUE;
  char ours[32];
  if (CUresult r = cuDeviceGetPCIBusId(ours, sizeof ours, 0); r != CUDA_SUCCESS) return r;
  unsigned d1 = 0, b1 = 0, s1 = 0, d2 = 0, b2 = 0, s2 = 0;
  if (std::sscanf(bus_id, "%x:%x:%x", &d1, &b1, &s1) != 3 &&
      (d1 = 0, std::sscanf(bus_id, "%x:%x", &b1, &s1) != 2))
    return CUDA_ERROR_INVALID_VALUE;
  std::sscanf(ours, "%x:%x:%x", &d2, &b2, &s2);
  if (d1 != d2 || b1 != b2 || s1 != s2) return CUDA_ERROR_INVALID_DEVICE;
  *dev = 0;
  return CUDA_SUCCESS;
}

// One virtual GPU per VM: no peers.
CUresult cuDeviceCanAccessPeer(int* can, CUdevice dev, CUdevice peer) {
  if (!can) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (CUresult r = check_device(peer); r != CUDA_SUCCESS) return r;
  *can = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute, CUdevice src, CUdevice dst) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(src); r != CUDA_SUCCESS) return r;
  if (CUresult r = check_device(dst); r != CUDA_SUCCESS) return r;
  *value = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetExecAffinitySupport(int* supported, CUexecAffinityType, CUdevice dev) {
  if (!supported) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  *supported = 0;
  return CUDA_SUCCESS;
}

}  // extern "C"
