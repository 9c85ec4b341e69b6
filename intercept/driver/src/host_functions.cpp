// Host functions and stream callbacks (cuLaunchHostFunc, cuStreamAddCallback)
// run in the guest, in stream order: when the work queued before them in
// their stream has finished, and before any work queued after them starts.
//
// They run in the calling thread, at the call, after waiting for the stream:
// that keeps the order with no host-side wait on the guest. The difference a
// program can see is that the call returns after the function has run; a
// function that waits for something its caller does after enqueuing it
// would wait forever, which CUDA's rules (no CUDA calls, no waiting on
// other work from a host function) already forbid.
#include "driver_state.h"
#include "stream_capture.h"

using namespace vgpu;
using namespace vgpu::driver;

extern "C" {

CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void* data) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  if (capture::capturing(stream)) {  // a host node of the capture
    graph::Node node;
    node.type = CU_GRAPH_NODE_TYPE_HOST;
    node.host = {fn, data};
    return capture::add(stream, std::move(node));
  }
  if (CUresult r = cuStreamSynchronize(stream); r != CUDA_SUCCESS) return r;
  fn(data);
  return CUDA_SUCCESS;
}

// The callback is told the stream's status: an earlier failure is passed to
// it (and returned, as a synchronising call would).
CUresult cuStreamAddCallback(CUstream stream, CUstreamCallback callback, void* data, unsigned flags) {
  if (!callback || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (capture::capturing(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // as in CUDA
  const CUresult status = cuStreamSynchronize(stream);
  if (status == CUDA_ERROR_INVALID_CONTEXT || status == CUDA_ERROR_NOT_INITIALIZED) return status;
  callback(stream, status, data);
  return status;
}

}  // extern "C"
