#include "vgpu/protocol/status.h"

namespace vgpu {

std::string_view status_name(Status s) {
  switch (s) {
    case Status::kSuccess: return "cudaSuccess";
    case Status::kInvalidValue: return "cudaErrorInvalidValue";
    case Status::kMemoryAllocation: return "cudaErrorMemoryAllocation";
    case Status::kInitializationError: return "cudaErrorInitializationError";
    case Status::kInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case Status::kInvalidSymbol: return "cudaErrorInvalidSymbol";
    case Status::kInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case Status::kInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case Status::kInsufficientDriver: return "cudaErrorInsufficientDriver";
    case Status::kDevicesUnavailable: return "cudaErrorDevicesUnavailable";
    case Status::kInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
    case Status::kNoDevice: return "cudaErrorNoDevice";
    case Status::kInvalidDevice: return "cudaErrorInvalidDevice";
    case Status::kInvalidKernelImage: return "cudaErrorInvalidKernelImage";
    case Status::kNoKernelImageForDevice: return "cudaErrorNoKernelImageForDevice";
    case Status::kInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case Status::kSymbolNotFound: return "cudaErrorSymbolNotFound";
    case Status::kNotReady: return "cudaErrorNotReady";
    case Status::kIllegalAddress: return "cudaErrorIllegalAddress";
    case Status::kLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case Status::kLaunchTimeout: return "cudaErrorLaunchTimeout";
    case Status::kAssert: return "cudaErrorAssert";
    case Status::kLaunchFailure: return "cudaErrorLaunchFailure";
    case Status::kInvalidClusterSize: return "cudaErrorInvalidClusterSize";
    case Status::kNotPermitted: return "cudaErrorNotPermitted";
    case Status::kNotSupported: return "cudaErrorNotSupported";
    case Status::kUnknown: return "cudaErrorUnknown";
  }
  return "cudaError(unknown)";
}

}  // namespace vgpu
