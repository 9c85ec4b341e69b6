// What a driver result means for the guest and for its context: the
// cudaError_t the guest's runtime would have returned, and whether the error
// is sticky (the context is unusable afterwards, as CUDA documents for
// illegal addresses, traps, assertions and the like).
#pragma once

#include <cuda.h>

#include "vgpu/protocol/status.h"

namespace vgpu::executor::cuda {

// The runtime's error for a driver result. The numbering is shared for the
// results the backend can see (checked at compile time in cu_status.cpp);
// anything else becomes kUnknown.
Status to_status(CUresult r);

// True for results after which CUDA requires the context to be destroyed.
bool is_sticky(CUresult r);

}  // namespace vgpu::executor::cuda
