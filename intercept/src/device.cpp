// Device queries and device-wide synchronisation.
#include <cstring>

#include "api.h"

using namespace vgpu;
using namespace vgpu::intercept;

namespace {

thread_local int current_device = 0;

// cudaDeviceProp from the host's attribute table: each field is the value of
// the attribute CUDA documents for it.
void fill_properties(cudaDeviceProp* p, const proto::GetDevicePropertiesReply& r) {
  std::memset(p, 0, sizeof *p);
  std::memcpy(p->name, r.name, sizeof p->name);
  p->name[sizeof p->name - 1] = '\0';
  std::memcpy(&p->uuid, r.uuid, sizeof p->uuid);
  p->totalGlobalMem = r.total_global_mem;
  auto a = [&r](cudaDeviceAttr attr) { return r.attributes[attr]; };
  auto z = [&r](cudaDeviceAttr attr) { return static_cast<size_t>(r.attributes[attr]); };
  p->sharedMemPerBlock = z(cudaDevAttrMaxSharedMemoryPerBlock);
  p->regsPerBlock = a(cudaDevAttrMaxRegistersPerBlock);
  p->warpSize = a(cudaDevAttrWarpSize);
  p->memPitch = z(cudaDevAttrMaxPitch);
  p->maxThreadsPerBlock = a(cudaDevAttrMaxThreadsPerBlock);
  p->maxThreadsDim[0] = a(cudaDevAttrMaxBlockDimX);
  p->maxThreadsDim[1] = a(cudaDevAttrMaxBlockDimY);
  p->maxThreadsDim[2] = a(cudaDevAttrMaxBlockDimZ);
  p->maxGridSize[0] = a(cudaDevAttrMaxGridDimX);
  p->maxGridSize[1] = a(cudaDevAttrMaxGridDimY);
  p->maxGridSize[2] = a(cudaDevAttrMaxGridDimZ);
  p->totalConstMem = z(cudaDevAttrTotalConstantMemory);
  p->major = a(cudaDevAttrComputeCapabilityMajor);
  p->minor = a(cudaDevAttrComputeCapabilityMinor);
  p->textureAlignment = z(cudaDevAttrTextureAlignment);
  p->texturePitchAlignment = z(cudaDevAttrTexturePitchAlignment);
  p->multiProcessorCount = a(cudaDevAttrMultiProcessorCount);
  p->integrated = a(cudaDevAttrIntegrated);
  p->canMapHostMemory = a(cudaDevAttrCanMapHostMemory);
  p->surfaceAlignment = z(cudaDevAttrSurfaceAlignment);
  p->concurrentKernels = a(cudaDevAttrConcurrentKernels);
  p->ECCEnabled = a(cudaDevAttrEccEnabled);
  p->pciBusID = a(cudaDevAttrPciBusId);
  p->pciDeviceID = a(cudaDevAttrPciDeviceId);
  p->pciDomainID = a(cudaDevAttrPciDomainId);
  p->tccDriver = a(cudaDevAttrTccDriver);
  p->asyncEngineCount = a(cudaDevAttrAsyncEngineCount);
  p->unifiedAddressing = a(cudaDevAttrUnifiedAddressing);
  p->memoryBusWidth = a(cudaDevAttrGlobalMemoryBusWidth);
  p->l2CacheSize = a(cudaDevAttrL2CacheSize);
  p->persistingL2CacheMaxSize = a(cudaDevAttrMaxPersistingL2CacheSize);
  p->maxThreadsPerMultiProcessor = a(cudaDevAttrMaxThreadsPerMultiProcessor);
  p->streamPrioritiesSupported = a(cudaDevAttrStreamPrioritiesSupported);
  p->globalL1CacheSupported = a(cudaDevAttrGlobalL1CacheSupported);
  p->localL1CacheSupported = a(cudaDevAttrLocalL1CacheSupported);
  p->sharedMemPerMultiprocessor = z(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  p->regsPerMultiprocessor = a(cudaDevAttrMaxRegistersPerMultiprocessor);
  p->managedMemory = a(cudaDevAttrManagedMemory);
  p->isMultiGpuBoard = a(cudaDevAttrIsMultiGpuBoard);
  p->multiGpuBoardGroupID = a(cudaDevAttrMultiGpuBoardGroupID);
  p->hostNativeAtomicSupported = a(cudaDevAttrHostNativeAtomicSupported);
  p->pageableMemoryAccess = a(cudaDevAttrPageableMemoryAccess);
  p->concurrentManagedAccess = a(cudaDevAttrConcurrentManagedAccess);
  p->computePreemptionSupported = a(cudaDevAttrComputePreemptionSupported);
  p->canUseHostPointerForRegisteredMem = a(cudaDevAttrCanUseHostPointerForRegisteredMem);
  p->cooperativeLaunch = a(cudaDevAttrCooperativeLaunch);
  p->sharedMemPerBlockOptin = z(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  p->pageableMemoryAccessUsesHostPageTables = a(cudaDevAttrPageableMemoryAccessUsesHostPageTables);
  p->directManagedMemAccessFromHost = a(cudaDevAttrDirectManagedMemAccessFromHost);
  p->maxBlocksPerMultiProcessor = a(cudaDevAttrMaxBlocksPerMultiprocessor);
  p->accessPolicyMaxWindowSize = a(cudaDevAttrMaxAccessPolicyWindowSize);
  p->reservedSharedMemPerBlock = z(cudaDevAttrReservedSharedMemoryPerBlock);
  p->hostRegisterSupported = a(cudaDevAttrHostRegisterSupported);
  p->sparseCudaArraySupported = a(cudaDevAttrSparseCudaArraySupported);
  p->hostRegisterReadOnlySupported = a(cudaDevAttrHostRegisterReadOnlySupported);
  p->timelineSemaphoreInteropSupported = a(cudaDevAttrTimelineSemaphoreInteropSupported);
  p->memoryPoolsSupported = a(cudaDevAttrMemoryPoolsSupported);
  p->gpuDirectRDMASupported = a(cudaDevAttrGPUDirectRDMASupported);
  p->gpuDirectRDMAFlushWritesOptions =
      static_cast<unsigned>(a(cudaDevAttrGPUDirectRDMAFlushWritesOptions));
  p->gpuDirectRDMAWritesOrdering = a(cudaDevAttrGPUDirectRDMAWritesOrdering);
  p->memoryPoolSupportedHandleTypes =
      static_cast<unsigned>(a(cudaDevAttrMemoryPoolSupportedHandleTypes));
  p->deferredMappingCudaArraySupported = a(cudaDevAttrDeferredMappingCudaArraySupported);
  p->ipcEventSupported = a(cudaDevAttrIpcEventSupport);
  p->clusterLaunch = a(cudaDevAttrClusterLaunch);
  p->deviceNumaConfig = a(cudaDevAttrNumaConfig);
  p->deviceNumaId = a(cudaDevAttrNumaId);
  p->mpsEnabled = a(cudaDevAttrMpsEnabled);
  p->hostNumaId = a(cudaDevAttrHostNumaId);
  p->gpuPciDeviceID = static_cast<unsigned>(a(cudaDevAttrGpuPciDeviceId));
  p->gpuPciSubsystemID = static_cast<unsigned>(a(cudaDevAttrGpuPciSubsystemId));
  p->hostNumaMultinodeIpcSupported = a(cudaDevAttrHostNumaMultinodeIpcSupported);
}

Status device_count(Connection& c, int* count) {
  proto::GetDeviceCountReply rep{};
  if (Status s = c.call(proto::GetDeviceCountRequest{}, {}, &rep); !ok(s)) return s;
  *count = rep.count;
  return Status::kSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return result(Status::kInvalidValue);
  *count = 0;
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  if (Status s = device_count(c, count); !ok(s)) {
    *count = 0;
    return result(s == Status::kDevicesUnavailable ? s : Status::kNoDevice);
  }
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (!device) return result(Status::kInvalidValue);
  *device = current_device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  int count = 0;
  if (Status s = device_count(c, &count); !ok(s)) return result(s);
  if (device < 0 || device >= count) return result(Status::kInvalidDevice);
  current_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!prop) return result(Status::kInvalidValue);
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::GetDevicePropertiesReply rep;
  if (Status s = c.call(proto::GetDevicePropertiesRequest{device, 0}, {}, &rep); !ok(s))
    return result(s);
  fill_properties(prop, rep);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (!value) return result(Status::kInvalidValue);
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::DeviceGetAttributeReply rep{};
  if (Status s = c.call(proto::DeviceGetAttributeRequest{static_cast<int32_t>(attr), device}, {},
                        &rep);
      !ok(s))
    return result(s);
  *value = rep.value;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  if (!version) return result(Status::kInvalidValue);
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::DriverGetVersionReply rep{};
  // Like CUDA without a driver: version 0, and not an error.
  *version = ok(c.call(proto::DriverGetVersionRequest{}, {}, &rep)) ? rep.version : 0;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  if (!version) return result(Status::kInvalidValue);
  *version = CUDART_VERSION;  // the runtime API this library implements
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::DeviceSynchronizeReply rep{};
  return result(with_async_errors(c, c.call(proto::DeviceSynchronizeRequest{}, {}, &rep)));
}

cudaError_t cudaDeviceReset(void) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::DeviceResetReply rep{};
  return result(with_async_errors(c, c.call(proto::DeviceResetRequest{}, {}, &rep)));
}

cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, cudaChannelFormatKind f) {
  return {x, y, z, w, f};
}

}  // extern "C"
