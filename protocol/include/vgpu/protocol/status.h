// Status values that cross module boundaries and the wire.
//
// They are numerically the CUDA runtime's cudaError_t values (a stable public
// ABI), so a reply's status is returned to the application unchanged. The
// intercept library checks these against the toolkit's own enum.
#pragma once

#include <cstdint>
#include <string_view>

namespace vgpu {

enum class Status : int32_t {
  kSuccess = 0,
  kInvalidValue = 1,
  kMemoryAllocation = 2,
  kInitializationError = 3,
  kInvalidConfiguration = 9,
  kInvalidSymbol = 13,
  kInvalidDevicePointer = 17,
  kInvalidMemcpyDirection = 21,
  kInsufficientDriver = 35,
  kDevicesUnavailable = 46,
  kInvalidDeviceFunction = 98,
  kNoDevice = 100,
  kInvalidDevice = 101,
  kInvalidKernelImage = 200,
  kNoKernelImageForDevice = 209,
  kInvalidResourceHandle = 400,
  kSymbolNotFound = 500,
  kNotReady = 600,
  kIllegalAddress = 700,
  kLaunchOutOfResources = 701,
  kLaunchTimeout = 702,
  kAssert = 710,  // a device assert failed: the context is lost
  kLaunchFailure = 719,
  kNotPermitted = 800,  // on the wire: queued work refused because the VM's GPU-time quota is spent
  kNotSupported = 801,
  kInvalidClusterSize = 912,  // a thread block cluster the launch or the device cannot have
  kUnknown = 999,
};

constexpr bool ok(Status s) { return s == Status::kSuccess; }

// The CUDA name of a status ("cudaErrorInvalidValue"), for logs.
std::string_view status_name(Status s);

}  // namespace vgpu
