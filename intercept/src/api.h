// Shared by the CUDA entry points: the thread's last error, and the helpers
// every entry point uses to talk to the host.
#pragma once

#include <cuda_runtime_api.h>

#include "connection.h"
#include "vgpu/protocol/status.h"

namespace vgpu::intercept {

// Records a failure as the calling thread's last error (cudaGetLastError).
cudaError_t result(Status s);
inline cudaError_t result(cudaError_t e) { return result(static_cast<Status>(e)); }

// cudaStream_t / cudaEvent_t values are the host's handles. The legacy and
// per-thread default streams are the host's default stream.
uint64_t stream_handle(cudaStream_t s);
inline uint64_t event_handle(cudaEvent_t e) { return reinterpret_cast<uint64_t>(e); }

}  // namespace vgpu::intercept
