// Stream capture: while a stream captures, the work a program queues into it
// (launches, asynchronous copies and memsets, host functions, event waits)
// becomes nodes of a graph (graph.h) instead of running. Streams join a
// capture through events recorded in a capturing stream, as in CUDA.
#pragma once

#include <cuda.h>

#include <atomic>

#include "graph.h"

namespace vgpu::driver::capture {

// How many streams capture now (a relaxed check for the hot paths).
extern std::atomic<int> active;

// Whether `stream` captures (never the legacy default stream).
bool capturing(CUstream stream);
// Adds `node` to the stream's capture after what was captured before in it.
CUresult add(CUstream stream, graph::Node node);
// An event recorded in a capturing stream marks a point of the capture;
// a stream that waits for it joins the capture from there. *handled: the
// call was about capture (nothing is to be sent to the host).
CUresult record_event(CUevent event, CUstream stream, bool* handled);
CUresult wait_event(CUstream stream, CUevent event, bool* handled);

}  // namespace vgpu::driver::capture
