#include "stream_capture.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

using namespace vgpu;
using namespace vgpu::driver;

namespace vgpu::driver::capture {

std::atomic<int> active{0};

namespace {

// One capture: its graph and the streams taking part.
struct Capture {
  unsigned long long id = 0;
  graph::Graph* graph = nullptr;
  CUstream origin = nullptr;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  bool invalidated = false;
  bool into_program_graph = false;  // cuStreamBeginCaptureToGraph: the program's graph, kept
};

// A stream taking part: the capture and the nodes its next work follows.
struct StreamState {
  std::shared_ptr<Capture> capture;
  std::vector<graph::Node*> tail;
};

std::mutex mu;
// Leaked, as the runtime may ask about streams from its exit handlers.
std::map<CUstream, StreamState>& streams = *new std::map<CUstream, StreamState>;  // guarded by mu
// Events recorded in a capture, guarded by mu.
std::map<CUevent, StreamState>& events = *new std::map<CUevent, StreamState>;
unsigned long long next_id = 1;           // guarded by mu
thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

void join(StreamState& into, const StreamState& from) {
  for (graph::Node* n : from.tail) {
    if (std::find(into.tail.begin(), into.tail.end(), n) == into.tail.end()) into.tail.push_back(n);
  }
}

}  // namespace

bool capturing(CUstream stream) {
  if (!stream || active.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard lock(mu);
  return streams.count(stream) > 0;
}

CUresult add(CUstream stream, graph::Node node) {
  std::lock_guard lock(mu);
  auto it = streams.find(stream);
  if (it == streams.end()) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  StreamState& s = it->second;
  std::vector<CUgraphNode> deps;
  for (graph::Node* n : s.tail) deps.push_back(reinterpret_cast<CUgraphNode>(n));
  graph::Node* added = nullptr;
  const CUresult r = graph::add_node(s.capture->graph, deps.data(), deps.size(), std::move(node), &added);
  if (r != CUDA_SUCCESS) {
    s.capture->invalidated = true;
    return r;
  }
  s.tail = {added};
  return CUDA_SUCCESS;
}

CUresult record_event(CUevent event, CUstream stream, bool* handled) {
  *handled = false;
  if (!stream || active.load(std::memory_order_relaxed) == 0) return CUDA_SUCCESS;
  std::lock_guard lock(mu);
  auto it = streams.find(stream);
  if (it == streams.end()) return CUDA_SUCCESS;
  events[event] = it->second;
  *handled = true;
  return CUDA_SUCCESS;
}

CUresult wait_event(CUstream stream, CUevent event, bool* handled) {
  *handled = false;
  if (active.load(std::memory_order_relaxed) == 0) return CUDA_SUCCESS;
  std::lock_guard lock(mu);
  auto e = events.find(event);
  if (e == events.end()) return CUDA_SUCCESS;
  if (!stream) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;  // the legacy stream cannot join
  *handled = true;
  auto s = streams.find(stream);
  if (s == streams.end()) {
    streams[stream] = e->second;  // a fork: this stream joins the capture
    active.fetch_add(1, std::memory_order_relaxed);
    return CUDA_SUCCESS;
  }
  if (s->second.capture != e->second.capture) return CUDA_ERROR_STREAM_CAPTURE_MERGE;
  join(s->second, e->second);
  return CUDA_SUCCESS;
}

}  // namespace vgpu::driver::capture

using namespace vgpu::driver::capture;

extern "C" {

namespace {

// Starts a capture of `stream` into `graph` (a new one when null), after `deps`.
CUresult begin(CUstream stream, graph::Graph* into, const CUgraphNode* deps, size_t count, CUstreamCaptureMode mode) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (!stream) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // not the legacy stream
  if (count && !deps) return CUDA_ERROR_INVALID_VALUE;
  std::vector<graph::Node*> tail;
  for (size_t i = 0; i < count; ++i) {
    graph::Node* n = graph::live_node(deps[i]);
    if (!n || n->owner != into) return CUDA_ERROR_INVALID_VALUE;
    tail.push_back(n);
  }
  std::lock_guard lock(mu);
  if (streams.count(stream)) return CUDA_ERROR_ILLEGAL_STATE;
  auto c = std::make_shared<Capture>();
  c->id = next_id++;
  c->into_program_graph = into != nullptr;
  c->graph = into ? into : graph::create();
  c->origin = stream;
  c->mode = mode;
  streams[stream] = {c, std::move(tail)};
  active.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
  return begin(stream, nullptr, nullptr, 0, mode);
}

// Capture into a graph the program has (a conditional node's body, say),
// after the given nodes of it; edge data beyond the default is not kept.
CUresult cuStreamBeginCaptureToGraph(CUstream stream, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData*,
                                     size_t count, CUstreamCaptureMode mode) {
  graph::Graph* into = graph::live_graph(g);
  if (!into) return CUDA_ERROR_INVALID_VALUE;
  return begin(stream, into, deps, count, mode);
}

CUresult cuStreamBeginCapture(CUstream stream) {
  return cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

CUresult cuStreamEndCapture(CUstream stream, CUgraph* out) {
  std::lock_guard lock(mu);
  auto it = streams.find(stream);
  if (it == streams.end()) return CUDA_ERROR_ILLEGAL_STATE;
  std::shared_ptr<Capture> c = it->second.capture;
  if (!out && !c->into_program_graph) return CUDA_ERROR_INVALID_VALUE;
  if (c->origin != stream) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  // Every stream of this capture stops capturing; its events are plain again.
  for (auto s = streams.begin(); s != streams.end();) {
    if (s->second.capture == c) {
      s = streams.erase(s);
      active.fetch_sub(1, std::memory_order_relaxed);
    } else {
      ++s;
    }
  }
  std::erase_if(events, [&](const auto& e) { return e.second.capture == c; });
  if (c->invalidated) {
    if (!c->into_program_graph) cuGraphDestroy(reinterpret_cast<CUgraph>(c->graph));
    if (out) *out = nullptr;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  if (out) *out = reinterpret_cast<CUgraph>(c->graph);
  return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu);
  auto it = streams.find(stream);
  *status = it == streams.end()               ? CU_STREAM_CAPTURE_STATUS_NONE
            : it->second.capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                              : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetCaptureInfo_v3(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id,
                                   CUgraph* graph_out, const CUgraphNode** deps,
                                   const CUgraphEdgeData** edges, size_t* n) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu);
  auto it = streams.find(stream);
  if (it == streams.end()) {
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (id) *id = 0;
    if (graph_out) *graph_out = nullptr;
    if (deps) *deps = nullptr;
    if (edges) *edges = nullptr;
    if (n) *n = 0;
    return CUDA_SUCCESS;
  }
  const StreamState& s = it->second;
  *status = s.capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (id) *id = s.capture->id;
  if (graph_out) *graph_out = reinterpret_cast<CUgraph>(s.capture->graph);
  // The array stays valid until the stream's next captured call, as in CUDA.
  if (deps) *deps = reinterpret_cast<const CUgraphNode*>(s.tail.data());
  if (edges) *edges = nullptr;
  if (n) *n = s.tail.size();
  return CUDA_SUCCESS;
}

CUresult cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id,
                                   CUgraph* graph, const CUgraphNode** deps, size_t* n) {
  return cuStreamGetCaptureInfo_v3(s, status, id, graph, deps, nullptr, n);
}

CUresult cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus* status, cuuint64_t* id) {
  return cuStreamGetCaptureInfo_v3(s, status, id, nullptr, nullptr, nullptr, nullptr);
}

// The nodes the stream's next captured work follows: replaced (SET) or added
// to; they must be nodes of the capture's graph (a program adds a node to
// it by hand, then makes the capture continue after it).
CUresult cuStreamUpdateCaptureDependencies_v2(CUstream stream, CUgraphNode* deps, const CUgraphEdgeData*,
                                              size_t count, unsigned flags) {
  if ((count && !deps) ||
      (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES && flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES))
    return CUDA_ERROR_INVALID_VALUE;
  std::vector<graph::Node*> given;
  for (size_t i = 0; i < count; ++i) {
    graph::Node* n = graph::live_node(deps[i]);
    if (!n) return CUDA_ERROR_INVALID_VALUE;
    given.push_back(n);
  }
  std::lock_guard lock(mu);
  auto it = streams.find(stream);
  if (it == streams.end()) return CUDA_ERROR_ILLEGAL_STATE;
  StreamState& s = it->second;
  for (graph::Node* n : given)
    if (n->owner != s.capture->graph) return CUDA_ERROR_INVALID_VALUE;
  if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES) s.tail.clear();
  for (graph::Node* n : given)
    if (std::find(s.tail.begin(), s.tail.end(), n) == s.tail.end()) s.tail.push_back(n);
  return CUDA_SUCCESS;
}

CUresult cuStreamUpdateCaptureDependencies(CUstream stream, CUgraphNode* deps, size_t count, unsigned flags) {
  return cuStreamUpdateCaptureDependencies_v2(stream, deps, nullptr, count, flags);
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  std::swap(*mode, thread_mode);
  return CUDA_SUCCESS;
}

}  // extern "C"
