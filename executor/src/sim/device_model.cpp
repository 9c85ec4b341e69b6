#include "device_model.h"

#include <driver_types.h>  // cudaDeviceAttr names only; nothing of CUDA is linked

#include <algorithm>
#include <cmath>
#include <limits>

#include "vgpu/protocol/device_capabilities.h"

namespace vgpu::executor::sim {
namespace {

// Values an H200 SXM reports (CUDA 13), except what SimConfig decides.
struct Attr {
  cudaDeviceAttr attr;
  int32_t value;
};
constexpr Attr kAttributes[] = {
    {cudaDevAttrMaxThreadsPerBlock, 1024},
    {cudaDevAttrMaxBlockDimX, 1024},
    {cudaDevAttrMaxBlockDimY, 1024},
    {cudaDevAttrMaxBlockDimZ, 64},
    {cudaDevAttrMaxGridDimX, 2147483647},
    {cudaDevAttrMaxGridDimY, 65535},
    {cudaDevAttrMaxGridDimZ, 65535},
    {cudaDevAttrMaxSharedMemoryPerBlock, 49152},
    {cudaDevAttrTotalConstantMemory, 65536},
    {cudaDevAttrWarpSize, 32},
    {cudaDevAttrMaxPitch, 2147483647},
    {cudaDevAttrMaxRegistersPerBlock, 65536},
    {cudaDevAttrClockRate, 1980000},
    {cudaDevAttrTextureAlignment, 512},
    {cudaDevAttrGpuOverlap, 1},
    {cudaDevAttrMultiProcessorCount, 132},
    {cudaDevAttrKernelExecTimeout, 0},
    {cudaDevAttrIntegrated, 0},
    {cudaDevAttrCanMapHostMemory, 1},
    {cudaDevAttrComputeMode, 0},
    {cudaDevAttrMaxTexture1DWidth, 131072},
    {cudaDevAttrMaxTexture2DWidth, 131072},
    {cudaDevAttrMaxTexture2DHeight, 65536},
    {cudaDevAttrMaxTexture3DWidth, 16384},
    {cudaDevAttrMaxTexture3DHeight, 16384},
    {cudaDevAttrMaxTexture3DDepth, 16384},
    {cudaDevAttrMaxTexture2DLayeredWidth, 32768},
    {cudaDevAttrMaxTexture2DLayeredHeight, 32768},
    {cudaDevAttrMaxTexture2DLayeredLayers, 2048},
    {cudaDevAttrSurfaceAlignment, 512},
    {cudaDevAttrConcurrentKernels, 1},
    {cudaDevAttrEccEnabled, 1},
    {cudaDevAttrPciBusId, 0},
    {cudaDevAttrPciDeviceId, 0},
    {cudaDevAttrTccDriver, 0},
    {cudaDevAttrMemoryClockRate, 2619000},
    {cudaDevAttrGlobalMemoryBusWidth, 6144},
    {cudaDevAttrL2CacheSize, 52428800},
    {cudaDevAttrMaxThreadsPerMultiProcessor, 2048},
    {cudaDevAttrAsyncEngineCount, 3},
    {cudaDevAttrUnifiedAddressing, 1},
    {cudaDevAttrMaxTexture1DLayeredWidth, 32768},
    {cudaDevAttrMaxTexture1DLayeredLayers, 2048},
    {cudaDevAttrMaxTexture2DGatherWidth, 32768},
    {cudaDevAttrMaxTexture2DGatherHeight, 32768},
    {cudaDevAttrMaxTexture3DWidthAlt, 8192},
    {cudaDevAttrMaxTexture3DHeightAlt, 8192},
    {cudaDevAttrMaxTexture3DDepthAlt, 32768},
    {cudaDevAttrPciDomainId, 0},
    {cudaDevAttrTexturePitchAlignment, 32},
    {cudaDevAttrMaxTextureCubemapWidth, 32768},
    {cudaDevAttrMaxTextureCubemapLayeredWidth, 32768},
    {cudaDevAttrMaxTextureCubemapLayeredLayers, 2046},
    {cudaDevAttrMaxSurface1DWidth, 32768},
    {cudaDevAttrMaxSurface2DWidth, 131072},
    {cudaDevAttrMaxSurface2DHeight, 65536},
    {cudaDevAttrMaxSurface3DWidth, 16384},
    {cudaDevAttrMaxSurface3DHeight, 16384},
    {cudaDevAttrMaxSurface3DDepth, 16384},
    {cudaDevAttrMaxSurface1DLayeredWidth, 32768},
    {cudaDevAttrMaxSurface1DLayeredLayers, 2048},
    {cudaDevAttrMaxSurface2DLayeredWidth, 32768},
    {cudaDevAttrMaxSurface2DLayeredHeight, 32768},
    {cudaDevAttrMaxSurface2DLayeredLayers, 2048},
    {cudaDevAttrMaxSurfaceCubemapWidth, 32768},
    {cudaDevAttrMaxSurfaceCubemapLayeredWidth, 32768},
    {cudaDevAttrMaxSurfaceCubemapLayeredLayers, 2046},
    {cudaDevAttrMaxTexture1DLinearWidth, 268435456},
    {cudaDevAttrMaxTexture2DLinearWidth, 131072},
    {cudaDevAttrMaxTexture2DLinearHeight, 65000},
    {cudaDevAttrMaxTexture2DLinearPitch, 2097120},
    {cudaDevAttrMaxTexture2DMipmappedWidth, 32768},
    {cudaDevAttrMaxTexture2DMipmappedHeight, 32768},
    {cudaDevAttrComputeCapabilityMajor, kComputeCapability / 10},
    {cudaDevAttrComputeCapabilityMinor, kComputeCapability % 10},
    {cudaDevAttrMaxTexture1DMipmappedWidth, 32768},
    {cudaDevAttrStreamPrioritiesSupported, 1},
    {cudaDevAttrGlobalL1CacheSupported, 1},
    {cudaDevAttrLocalL1CacheSupported, 1},
    {cudaDevAttrMaxSharedMemoryPerMultiprocessor, 233472},
    {cudaDevAttrMaxRegistersPerMultiprocessor, 65536},
    {cudaDevAttrManagedMemory, 1},
    {cudaDevAttrIsMultiGpuBoard, 0},
    {cudaDevAttrMultiGpuBoardGroupID, 0},
    {cudaDevAttrHostNativeAtomicSupported, 0},
    {cudaDevAttrSingleToDoublePrecisionPerfRatio, 2},
    {cudaDevAttrPageableMemoryAccess, 0},
    {cudaDevAttrConcurrentManagedAccess, 1},
    {cudaDevAttrComputePreemptionSupported, 1},
    {cudaDevAttrCanUseHostPointerForRegisteredMem, 1},
    {cudaDevAttrCooperativeLaunch, 1},
    {cudaDevAttrMaxSharedMemoryPerBlockOptin, static_cast<int32_t>(kMaxSharedPerBlockOptin)},
    {cudaDevAttrCanFlushRemoteWrites, 0},
    {cudaDevAttrHostRegisterSupported, 1},
    {cudaDevAttrPageableMemoryAccessUsesHostPageTables, 0},
    {cudaDevAttrDirectManagedMemAccessFromHost, 0},
    {cudaDevAttrMaxBlocksPerMultiprocessor, 32},
    {cudaDevAttrMaxPersistingL2CacheSize, 82837504},
    {cudaDevAttrMaxAccessPolicyWindowSize, 134213632},
    {cudaDevAttrReservedSharedMemoryPerBlock, 1024},
    {cudaDevAttrSparseCudaArraySupported, 1},
    {cudaDevAttrHostRegisterReadOnlySupported, 1},
    {cudaDevAttrTimelineSemaphoreInteropSupported, 1},
    {cudaDevAttrMemoryPoolsSupported, 1},
    {cudaDevAttrGPUDirectRDMASupported, 0},
    {cudaDevAttrGPUDirectRDMAFlushWritesOptions, 0},
    {cudaDevAttrGPUDirectRDMAWritesOrdering, 0},
    {cudaDevAttrMemoryPoolSupportedHandleTypes, 1},  // POSIX fd
    {cudaDevAttrClusterLaunch, 1},
    {cudaDevAttrDeferredMappingCudaArraySupported, 1},
    {cudaDevAttrIpcEventSupport, 1},
    {cudaDevAttrMemSyncDomainCount, 4},
    {cudaDevAttrNumaConfig, 0},
    {cudaDevAttrNumaId, -1},
    {cudaDevAttrMpsEnabled, 0},
    {cudaDevAttrHostNumaId, -1},
    {cudaDevAttrGpuPciDeviceId, 0x233510de},  // H200 SXM, NVIDIA
    {cudaDevAttrGpuPciSubsystemId, 0x18cd10de},
};

static_assert(cudaDevAttrMax <= kDeviceAttributeCount, "DeviceInfo::attributes too small");
static_assert(cudaDevAttrMax <= proto::kCapabilitiesAttribute && proto::kCapabilitiesAttribute < kDeviceAttributeCount,
              "vgpu's capability slot must lie past every CUDA attribute");

}  // namespace

DeviceInfo make_device_info(const SimConfig& config) {
  DeviceInfo info;
  info.name = "vgpu sim";
  // A fixed, version-4-shaped UUID: the same device every run; the host's
  // n-th sim GPU ends in n + 1.
  info.uuid = {0x76, 0x67, 0x70, 0x75, 0x2d, 0x73, 0x49, 0x6d,
               0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01};
  info.uuid[14] = static_cast<uint8_t>((config.device_index + 1) >> 8);
  info.uuid[15] = static_cast<uint8_t>(config.device_index + 1);
  info.total_memory = config.device_memory;
  info.driver_version = kDriverVersion;
  for (const Attr& a : kAttributes) {
    info.attributes[static_cast<size_t>(a.attr)] = a.value;
  }
  // A plug-in's cudaGraphSetConditional writes the handle's cell itself.
  info.attributes[proto::kCapabilitiesAttribute] = proto::kCapGraphConditionals;
  return info;
}

Status check_launch_config(const uint32_t grid[3], const uint32_t block[3], uint32_t shared_mem,
                           uint32_t max_threads) {
  uint64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || grid[i] > kMaxGridDim[i]) return Status::kInvalidConfiguration;
    if (block[i] == 0 || block[i] > kMaxBlockDim[i]) return Status::kInvalidConfiguration;
    threads *= block[i];
  }
  if (threads > kMaxThreadsPerBlock) return Status::kInvalidConfiguration;
  if (shared_mem > kMaxSharedPerBlockOptin) return Status::kInvalidValue;
  if (max_threads != 0 && threads > max_threads) return Status::kLaunchOutOfResources;
  return Status::kSuccess;
}

uint64_t modeled_launch_ns(const SimConfig& config, const uint32_t grid[3],
                           const uint32_t block[3]) {
  double threads = 1.0;
  for (int i = 0; i < 3; ++i) threads *= static_cast<double>(grid[i]) * block[i];
  const double ns = static_cast<double>(config.kernel_base_ns) + config.ns_per_thread * threads;
  constexpr double kMax = 9.0e18;  // saturate well inside uint64_t
  if (!(ns < kMax)) return static_cast<uint64_t>(kMax);
  return ns <= 0.0 ? 0 : static_cast<uint64_t>(ns);
}

FunctionAttributes function_attributes(const fatbin::Module& image, uint32_t max_threads) {
  FunctionAttributes a;
  // The kernel's own bound (__launch_bounds__), as a GPU reports it: the
  // occupancy calculator and programs that size their blocks read it here.
  a.max_threads_per_block = static_cast<int32_t>(
      max_threads == 0 ? kMaxThreadsPerBlock : std::min<uint32_t>(max_threads, kMaxThreadsPerBlock));
  a.num_regs = 32;
  // The code that runs. With PTX that is the interpreter's: the PTX of the
  // lowest architecture, compiled for the device as a GPU compiles PTX.
  // Libraries pick their tuning by ptxVersion (CUB's PtxVersion), and the
  // tuning must match the code: a program built for sm_90 and compute_75
  // runs compute_75 here, where a GPU would run the sm_90 cubin. Without
  // PTX, what a GPU of this capability would run (a plug-in runs whichever
  // it is); an image with no code for it still answers: the sim does not
  // refuse by architecture.
  fatbin::ImageChoice choice{kComputeCapability, kComputeCapability};
  if (!image.ptx_archs.empty()) {
    choice.ptx_version = image.ptx_archs.front();
  } else {
    (void)fatbin::choose_image(image, kComputeCapability, &choice);
  }
  a.ptx_version = static_cast<int32_t>(choice.ptx_version);
  a.binary_version = static_cast<int32_t>(choice.binary_version);
  return a;
}

}  // namespace vgpu::executor::sim
