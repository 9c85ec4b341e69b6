// The graph model behind the cu*Graph* entry points (graph.h): the live
// graphs and nodes, adding and cloning nodes, issuing one node, setting a
// node's parameters. The entry points: graph.cpp.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "graph.h"
#include "graph_registry.h"
#include "stream_capture.h"
#include "vgpu/protocol/device_capabilities.h"

using namespace vgpu;
using namespace vgpu::driver;

namespace vgpu::driver::graph {

std::mutex& mu() {
  static auto* m = new std::mutex;
  return *m;
}
// Graphs the program owns (a child graph's clone is owned by its node).
std::unordered_set<Graph*>& graphs() {
  static auto* s = new std::unordered_set<Graph*>;  // leaked: used until exit
  return *s;
}
// Every node of every graph, owned or not: node handles are checked here.
std::unordered_set<Node*>& nodes() {
  static auto* s = new std::unordered_set<Node*>;
  return *s;
}

void forget_nodes(Graph& g) {
  for (auto& n : g.nodes) {
    nodes().erase(n.get());
    if (n->child) forget_nodes(*n->child);
    for (auto& body : n->bodies) {
      graphs().erase(body.get());
      forget_nodes(*body);
    }
  }
}

// A conditional node's bodies are graphs the program adds nodes to (through
// the handles phGraph_out gave it), so they are live graphs too; only their
// node may free them.
void remember_nodes(Graph& g) {
  for (auto& n : g.nodes) {
    nodes().insert(n.get());
    if (n->child) remember_nodes(*n->child);
    for (auto& body : n->bodies) {
      graphs().insert(body.get());
      remember_nodes(*body);
    }
  }
}

Graph::~Graph() {
  for (auto& [object, count] : user_objects) release(object, count, true);
}

DeviceBlock::~DeviceBlock() {
  if (ptr) (void)cuMemFree_v2(ptr);
}

Graph* live_graph(CUgraph g) {
  std::lock_guard lock(mu());
  auto* p = reinterpret_cast<Graph*>(g);
  return graphs().count(p) ? p : nullptr;
}

Node* live_node(CUgraphNode n) {
  std::lock_guard lock(mu());
  auto* p = reinterpret_cast<Node*>(n);
  return nodes().count(p) ? p : nullptr;
}

Graph* create() {
  auto* g = new Graph;
  std::lock_guard lock(mu());
  graphs().insert(g);
  return g;
}

CUresult add_node(Graph* g, const CUgraphNode* deps, size_t count, Node proto, Node** out) {
  if (!g || !out || (count && !deps)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu());
  for (size_t i = 0; i < count; ++i) {
    auto* d = reinterpret_cast<Node*>(deps[i]);
    if (!nodes().count(d) || d->owner != g) return CUDA_ERROR_INVALID_VALUE;
    proto.deps.push_back(d);
  }
  auto n = std::make_unique<Node>(std::move(proto));
  n->owner = g;
  if (n->child) remember_nodes(*n->child);
  for (auto& body : n->bodies) {
    body->parent = n.get();
    graphs().insert(body.get());
    remember_nodes(*body);
  }
  *out = n.get();
  nodes().insert(n.get());
  g->nodes.push_back(std::move(n));
  return CUDA_SUCCESS;
}

CUresult set_kernel(Node* n, CUfunction fn, CUkernel kern, const unsigned grid[3],
                    const unsigned block[3], unsigned shared_mem, void** params, void** extra) {
  CUfunction handle = fn ? fn : reinterpret_cast<CUfunction>(kern);
  Function* f = nullptr;
  std::vector<uint8_t> bytes;
  if (CUresult r = pack_arguments(handle, params, extra, &f, &bytes); r != CUDA_SUCCESS) return r;
  return set_kernel_packed(n, f, grid, block, shared_mem, std::move(bytes));
}

CUresult set_kernel_packed(Node* n, Function* f, const unsigned grid[3], const unsigned block[3],
                           unsigned shared_mem, std::vector<uint8_t> bytes) {
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || block[i] == 0) return CUDA_ERROR_INVALID_VALUE;
    n->grid[i] = grid[i];
    n->block[i] = block[i];
  }
  n->type = CU_GRAPH_NODE_TYPE_KERNEL;
  n->function = f;
  n->shared_mem = shared_mem;
  n->params = std::move(bytes);
  n->param_ptrs.clear();
  for (const auto& p : f->layout->params) n->param_ptrs.push_back(n->params.data() + p.offset);
  return CUDA_SUCCESS;
}

std::unique_ptr<Graph> clone(const Graph& g, std::vector<std::pair<const Node*, Node*>>* map) {
  auto copy = std::make_unique<Graph>();
  copy->conditionals = g.conditionals;  // the same cells: a kernel's handle names them
  copy->user_objects = g.user_objects;  // a copy holds references of its own
  for (auto& [object, count] : copy->user_objects) retain(object, count);
  std::vector<std::pair<const Node*, Node*>> local;
  auto& m = map ? *map : local;
  for (const auto& n : g.nodes) {
    auto c = std::make_unique<Node>(*n);
    c->owner = copy.get();
    c->cloned_from = n.get();
    if (n->child) c->child = clone(*n->child, nullptr);
    c->body_handles.clear();
    for (auto& body : c->bodies) {
      body = clone(*body, nullptr);
      body->parent = c.get();
      c->body_handles.push_back(reinterpret_cast<CUgraph>(body.get()));
    }
    // param_ptrs point into the copy's own buffer.
    for (size_t i = 0; i < c->param_ptrs.size(); ++i)
      c->param_ptrs[i] =
          c->params.data() + (static_cast<uint8_t*>(n->param_ptrs[i]) - n->params.data());
    m.emplace_back(n.get(), c.get());
    copy->nodes.push_back(std::move(c));
  }
  auto find = [&](const Node* old) {
    for (auto& [o, c] : m)
      if (o == old) return c;
    return static_cast<Node*>(nullptr);
  };
  for (auto& c : copy->nodes) {
    for (auto& d : c->deps) d = find(d);
  }
  return copy;
}

CUresult issue(const Node& n, CUstream stream) {
  switch (n.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      size_t size = n.params.size();
      void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<uint8_t*>(n.params.data()),
                       CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
      if (n.cluster[0] * n.cluster[1] * n.cluster[2] > 1) {
        CUlaunchAttribute attr{};
        attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr.value.clusterDim = {n.cluster[0], n.cluster[1], n.cluster[2]};
        CUlaunchConfig config{n.grid[0],  n.grid[1],    n.grid[2], n.block[0], n.block[1],
                              n.block[2], n.shared_mem, stream,    &attr,      1};
        return cuLaunchKernelEx(&config, reinterpret_cast<CUfunction>(n.function), nullptr,
                                n.params.empty() ? nullptr : extra);
      }
      return cuLaunchKernel(reinterpret_cast<CUfunction>(n.function), n.grid[0], n.grid[1],
                            n.grid[2], n.block[0], n.block[1], n.block[2], n.shared_mem, stream,
                            nullptr, n.params.empty() ? nullptr : extra);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return cuMemcpy3DAsync_v2(&n.copy, stream);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const CUDA_MEMSET_NODE_PARAMS& m = n.memset;
      const size_t pitch = m.height > 1 ? m.pitch : m.width * m.elementSize;
      switch (m.elementSize) {
        case 1:
          return cuMemsetD2D8Async(m.dst, pitch, static_cast<unsigned char>(m.value), m.width,
                                   m.height, stream);
        case 2:
          return cuMemsetD2D16Async(m.dst, pitch, static_cast<unsigned short>(m.value), m.width,
                                    m.height, stream);
        default:
          return cuMemsetD2D32Async(m.dst, pitch, m.value, m.width, m.height, stream);
      }
    }
    case CU_GRAPH_NODE_TYPE_HOST:
      return cuLaunchHostFunc(stream, n.host.fn, n.host.userData);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return cuEventRecord(n.event, stream);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return cuStreamWaitEvent(stream, n.event, 0);
    // Made when the node was added; freed with the last graph holding it.
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_GRAPH:  // flattened when instantiated
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;  // conditional nodes: graph_exec.cpp
  }
}

const Conditional* find_conditional(const Graph& g, CUgraphConditionalHandle h) {
  for (const Graph* at = &g; at; at = at->parent ? at->parent->owner : nullptr) {
    for (const Conditional& c : at->conditionals)
      if (c.cell->ptr == h) return &c;
  }
  return nullptr;
}

CUresult set_params(Node* n, const CUgraphNodeParams* p) {
  if (!n || !p || p->type != n->type) return CUDA_ERROR_INVALID_VALUE;
  switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      const auto& k = p->kernel;
      const unsigned grid[3] = {k.gridDimX, k.gridDimY, k.gridDimZ};
      const unsigned block[3] = {k.blockDimX, k.blockDimY, k.blockDimZ};
      return set_kernel(n, k.func, k.kern, grid, block, k.sharedMemBytes, k.kernelParams, k.extra);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      n->copy = p->memcpy.copyParams;
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const auto& m = p->memset;
      if ((m.elementSize != 1 && m.elementSize != 2 && m.elementSize != 4) || m.width == 0 ||
          m.height == 0)
        return CUDA_ERROR_INVALID_VALUE;
      n->memset = {m.dst, m.pitch, m.value, m.elementSize, m.width, m.height};
      return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_HOST:
      if (!p->host.fn) return CUDA_ERROR_INVALID_VALUE;
      n->host = {p->host.fn, p->host.userData};
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      if (!p->eventRecord.event) return CUDA_ERROR_INVALID_VALUE;
      n->event = p->eventRecord.event;
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      if (!p->eventWait.event) return CUDA_ERROR_INVALID_VALUE;
      n->event = p->eventWait.event;
      return CUDA_SUCCESS;
    default:
      return refuse(
          "setting the parameters of child graph, memory, conditional and other such nodes");
  }
}

}  // namespace vgpu::driver::graph
