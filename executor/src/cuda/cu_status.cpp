#include "cu_status.h"

#include <driver_types.h>  // cudaError_t, for the compile-time checks only

namespace vgpu::executor::cuda {
namespace {

// A driver result passed through unchanged must mean the same to the runtime.
#define VGPU_SAME(cu, rt) \
  static_assert(static_cast<int>(cu) == static_cast<int>(rt), #cu " != " #rt);
VGPU_SAME(CUDA_ERROR_INVALID_VALUE, cudaErrorInvalidValue)
VGPU_SAME(CUDA_ERROR_OUT_OF_MEMORY, cudaErrorMemoryAllocation)
VGPU_SAME(CUDA_ERROR_NOT_INITIALIZED, cudaErrorInitializationError)
VGPU_SAME(CUDA_ERROR_NO_DEVICE, cudaErrorNoDevice)
VGPU_SAME(CUDA_ERROR_INVALID_DEVICE, cudaErrorInvalidDevice)
VGPU_SAME(CUDA_ERROR_INVALID_IMAGE, cudaErrorInvalidKernelImage)
VGPU_SAME(CUDA_ERROR_NO_BINARY_FOR_GPU, cudaErrorNoKernelImageForDevice)
VGPU_SAME(CUDA_ERROR_ECC_UNCORRECTABLE, cudaErrorECCUncorrectable)
VGPU_SAME(CUDA_ERROR_INVALID_PTX, cudaErrorInvalidPtx)
VGPU_SAME(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, cudaErrorUnsupportedPtxVersion)
VGPU_SAME(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, cudaErrorJitCompilerNotFound)
VGPU_SAME(CUDA_ERROR_INVALID_HANDLE, cudaErrorInvalidResourceHandle)
VGPU_SAME(CUDA_ERROR_NOT_FOUND, cudaErrorSymbolNotFound)
VGPU_SAME(CUDA_ERROR_NOT_READY, cudaErrorNotReady)
VGPU_SAME(CUDA_ERROR_ILLEGAL_ADDRESS, cudaErrorIllegalAddress)
VGPU_SAME(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, cudaErrorLaunchOutOfResources)
VGPU_SAME(CUDA_ERROR_LAUNCH_TIMEOUT, cudaErrorLaunchTimeout)
VGPU_SAME(CUDA_ERROR_ASSERT, cudaErrorAssert)
VGPU_SAME(CUDA_ERROR_HARDWARE_STACK_ERROR, cudaErrorHardwareStackError)
VGPU_SAME(CUDA_ERROR_ILLEGAL_INSTRUCTION, cudaErrorIllegalInstruction)
VGPU_SAME(CUDA_ERROR_MISALIGNED_ADDRESS, cudaErrorMisalignedAddress)
VGPU_SAME(CUDA_ERROR_INVALID_ADDRESS_SPACE, cudaErrorInvalidAddressSpace)
VGPU_SAME(CUDA_ERROR_INVALID_PC, cudaErrorInvalidPc)
VGPU_SAME(CUDA_ERROR_LAUNCH_FAILED, cudaErrorLaunchFailure)
VGPU_SAME(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, cudaErrorCooperativeLaunchTooLarge)
VGPU_SAME(CUDA_ERROR_NOT_PERMITTED, cudaErrorNotPermitted)
VGPU_SAME(CUDA_ERROR_NOT_SUPPORTED, cudaErrorNotSupported)
VGPU_SAME(CUDA_ERROR_UNKNOWN, cudaErrorUnknown)
VGPU_SAME(CUDA_ERROR_INVALID_CLUSTER_SIZE, cudaErrorInvalidClusterSize)
#undef VGPU_SAME

}  // namespace

Status to_status(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS:
      return Status::kSuccess;
    // The same number on both sides (checked above).
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_OUT_OF_MEMORY:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_NOT_READY:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
    case CUDA_ERROR_INVALID_CLUSTER_SIZE:
    case CUDA_ERROR_NOT_PERMITTED:
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_UNKNOWN:
      return static_cast<Status>(static_cast<int32_t>(r));
    // The runtime names these differently.
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return Status::kLaunchFailure;  // the context is gone: what the guest can act on
    case CUDA_ERROR_DEINITIALIZED:
      return Status::kInitializationError;
    default:
      return Status::kUnknown;
  }
}

bool is_sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_UNKNOWN:
      return true;
    default:
      return false;
  }
}

}  // namespace vgpu::executor::cuda
