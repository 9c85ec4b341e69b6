// The cu*Graph* entry points: graphs and their nodes, creation, the node
// kinds, parameters, queries (the model behind them: graph_model.cpp).
// Instantiation and launch: graph_exec.cpp.
#include "graph.h"
#include "graph_registry.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "stream_capture.h"
#include "vgpu/protocol/device_capabilities.h"

using namespace vgpu;
using namespace vgpu::driver;
using namespace vgpu::driver::graph;

namespace {

CUresult add(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count, Node proto) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = live_graph(g);
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  Node* n = nullptr;
  if (CUresult r = add_node(graph, deps, count, std::move(proto), &n); r != CUDA_SUCCESS) return r;
  *out = reinterpret_cast<CUgraphNode>(n);
  return CUDA_SUCCESS;
}

CUresult kernel_node(Node* n, const CUDA_KERNEL_NODE_PARAMS* p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
  const unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
  return set_kernel(n, p->func, p->kern, grid, block, p->sharedMemBytes, p->kernelParams, p->extra);
}

CUresult memset_node(Node* n, const CUDA_MEMSET_NODE_PARAMS* p) {
  if (!p || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) || p->width == 0 ||
      p->height == 0)
    return CUDA_ERROR_INVALID_VALUE;
  n->type = CU_GRAPH_NODE_TYPE_MEMSET;
  n->memset = *p;
  return CUDA_SUCCESS;
}

CUresult alloc_node(Node* n, CUDA_MEM_ALLOC_NODE_PARAMS* p) {
  if (!p || p->bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (p->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE || p->poolProps.location.id != 0)
    return CUDA_ERROR_INVALID_VALUE;
  auto block = std::make_shared<DeviceBlock>();
  if (CUresult r = cuMemAlloc_v2(&block->ptr, p->bytesize); r != CUDA_SUCCESS) return r;
  n->type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  n->allocation = block;
  p->dptr = block->ptr;
  return CUDA_SUCCESS;
}

// A switch's bodies: CUDA sets no limit; this bounds what one call allocates.
constexpr unsigned kMaxSwitchBodies = 1u << 16;

// A conditional node: its handle must come from `g` or a graph enclosing it;
// its bodies are new, empty graphs the program fills (phGraph_out).
CUresult conditional_node(Node* n, const Graph& g, const CUDA_CONDITIONAL_NODE_PARAMS& p) {
  if (!find_conditional(g, p.handle)) return CUDA_ERROR_INVALID_VALUE;
  switch (p.type) {
    case CU_GRAPH_COND_TYPE_IF:
      if (p.size != 1 && p.size != 2) return CUDA_ERROR_INVALID_VALUE;
      break;
    case CU_GRAPH_COND_TYPE_WHILE:
      if (p.size != 1) return CUDA_ERROR_INVALID_VALUE;
      break;
    case CU_GRAPH_COND_TYPE_SWITCH:
      if (p.size == 0 || p.size > kMaxSwitchBodies) return CUDA_ERROR_INVALID_VALUE;
      break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  n->type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  n->cond_type = p.type;
  n->cond_handle = p.handle;
  for (unsigned i = 0; i < p.size; ++i) {
    n->bodies.push_back(std::make_shared<Graph>());
    n->body_handles.push_back(reinterpret_cast<CUgraph>(n->bodies.back().get()));
  }
  return CUDA_SUCCESS;
}

template <class Fn>
CUresult with_node(CUgraphNode handle, CUgraphNodeType type, Fn fn) {
  Node* n = live_node(handle);
  if (!n || n->type != type) return CUDA_ERROR_INVALID_VALUE;
  return fn(*n);
}

// A list answer: *count entries when `out` is null, else up to *count.
template <class T>
CUresult list(const std::vector<T>& items, T* out, size_t* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  if (!out) {
    *count = items.size();
    return CUDA_SUCCESS;
  }
  const size_t n = std::min(*count, items.size());
  std::copy_n(items.begin(), n, out);
  for (size_t i = n; i < *count; ++i) out[i] = T{};
  *count = n;
  return CUDA_SUCCESS;
}

std::vector<CUgraphNode> dependents_of(const Node& n) {
  std::vector<CUgraphNode> out;
  for (const auto& other : n.owner->nodes) {
    if (std::count(other->deps.begin(), other->deps.end(), &n))
      out.push_back(reinterpret_cast<CUgraphNode>(other.get()));
  }
  return out;
}

}  // namespace

extern "C" {

CUresult cuGraphCreate(CUgraph* g, unsigned flags) {
  if (!g || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *g = reinterpret_cast<CUgraph>(create());
  return CUDA_SUCCESS;
}

// The handle is the address of a cell of the tenant's device memory (graph.h),
// which lives as long as the graph or any instantiation of it.
CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle* out, CUgraph g, CUcontext,
                                        unsigned default_value, unsigned flags) {
  Graph* graph = live_graph(g);
  if (!out || !graph || (flags & ~CU_GRAPH_COND_ASSIGN_DEFAULT)) return CUDA_ERROR_INVALID_VALUE;
  const DeviceInfo* info = nullptr;
  if (CUresult r = device_info(&info); r != CUDA_SUCCESS) return r;
  if (!(info->attribute(proto::kCapabilitiesAttribute) & proto::kCapGraphConditionals))
    return refuse("graph conditional nodes on this host's GPU backend");
  Conditional c;
  c.cell = std::make_shared<DeviceBlock>();
  if (CUresult r = cuMemAlloc_v2(&c.cell->ptr, sizeof(unsigned)); r != CUDA_SUCCESS) return r;
  if (CUresult r = cuMemsetD32_v2(c.cell->ptr, default_value, 1); r != CUDA_SUCCESS) return r;
  c.default_value = default_value;
  c.assign_default = flags & CU_GRAPH_COND_ASSIGN_DEFAULT;
  *out = c.cell->ptr;
  graph->conditionals.push_back(std::move(c));
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph g) {
  Graph* graph = live_graph(g);
  if (!graph || graph->parent) return CUDA_ERROR_INVALID_VALUE;  // a body goes with its node
  {
    std::lock_guard lock(graph::mu());
    graphs().erase(graph);
    forget_nodes(*graph);
  }
  delete graph;
  return CUDA_SUCCESS;
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                 const CUDA_KERNEL_NODE_PARAMS* p) {
  Node proto;
  if (CUresult r = kernel_node(&proto, p); r != CUDA_SUCCESS) return r;
  return add(out, g, deps, count, std::move(proto));
}

CUresult cuGraphAddMemcpyNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                              const CUDA_MEMCPY3D* p, CUcontext) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  Node proto;
  proto.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  proto.copy = *p;
  return add(out, g, deps, count, std::move(proto));
}

CUresult cuGraphAddMemsetNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                              const CUDA_MEMSET_NODE_PARAMS* p, CUcontext) {
  Node proto;
  if (CUresult r = memset_node(&proto, p); r != CUDA_SUCCESS) return r;
  return add(out, g, deps, count, std::move(proto));
}

CUresult cuGraphAddHostNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                            const CUDA_HOST_NODE_PARAMS* p) {
  if (!p || !p->fn) return CUDA_ERROR_INVALID_VALUE;
  Node proto;
  proto.type = CU_GRAPH_NODE_TYPE_HOST;
  proto.host = *p;
  return add(out, g, deps, count, std::move(proto));
}

CUresult cuGraphAddChildGraphNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                  CUgraph child) {
  Graph* c = live_graph(child);
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  Node proto;
  proto.type = CU_GRAPH_NODE_TYPE_GRAPH;
  {
    std::lock_guard lock(graph::mu());
    proto.child = clone(*c, nullptr);
  }
  return add(out, g, deps, count, std::move(proto));
}

CUresult cuGraphAddEmptyNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count) {
  return add(out, g, deps, count, Node{});
}

CUresult cuGraphAddEventRecordNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                   CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  Node proto;
  proto.type = CU_GRAPH_NODE_TYPE_EVENT_RECORD;
  proto.event = e;
  return add(out, g, deps, count, std::move(proto));
}

CUresult cuGraphAddEventWaitNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                 CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  Node proto;
  proto.type = CU_GRAPH_NODE_TYPE_WAIT_EVENT;
  proto.event = e;
  return add(out, g, deps, count, std::move(proto));
}

// The memory is allocated when the node is added and stays until the last
// graph holding the node goes (CUDA allocates at each launch and frees at
// the free node; the addresses a program sees are the same).
CUresult cuGraphAddMemAllocNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                                CUDA_MEM_ALLOC_NODE_PARAMS* p) {
  Node proto;
  if (CUresult r = alloc_node(&proto, p); r != CUDA_SUCCESS) return r;
  return add(out, g, deps, count, std::move(proto));
}

CUresult cuGraphAddMemFreeNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                               CUdeviceptr ptr) {
  if (!ptr) return CUDA_ERROR_INVALID_VALUE;
  Node proto;
  proto.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
  proto.free_ptr = ptr;
  return add(out, g, deps, count, std::move(proto));
}

// The generic form (CUDA 12.2+): the same kinds of node.
CUresult cuGraphAddNode_v2(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData*,
                           size_t count, CUgraphNodeParams* p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  Node proto;
  switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      const auto& k = p->kernel;
      const unsigned grid[3] = {k.gridDimX, k.gridDimY, k.gridDimZ};
      const unsigned block[3] = {k.blockDimX, k.blockDimY, k.blockDimZ};
      if (CUresult r = set_kernel(&proto, k.func, k.kern, grid, block, k.sharedMemBytes, k.kernelParams, k.extra);
          r != CUDA_SUCCESS)
        return r;
      break;
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      proto.type = CU_GRAPH_NODE_TYPE_MEMCPY;
      proto.copy = p->memcpy.copyParams;
      break;
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      CUDA_MEMSET_NODE_PARAMS m{p->memset.dst, p->memset.pitch, p->memset.value, p->memset.elementSize,
                                p->memset.width, p->memset.height};
      if (CUresult r = memset_node(&proto, &m); r != CUDA_SUCCESS) return r;
      break;
    }
    case CU_GRAPH_NODE_TYPE_HOST:
      if (!p->host.fn) return CUDA_ERROR_INVALID_VALUE;
      proto.type = CU_GRAPH_NODE_TYPE_HOST;
      proto.host = {p->host.fn, p->host.userData};
      break;
    case CU_GRAPH_NODE_TYPE_GRAPH: return cuGraphAddChildGraphNode(out, g, deps, count, p->graph.graph);
    case CU_GRAPH_NODE_TYPE_EMPTY: break;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return cuGraphAddEventRecordNode(out, g, deps, count, p->eventRecord.event);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return cuGraphAddEventWaitNode(out, g, deps, count, p->eventWait.event);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
      CUDA_MEM_ALLOC_NODE_PARAMS a{p->alloc.poolProps, p->alloc.accessDescs, p->alloc.accessDescCount,
                                   p->alloc.bytesize, 0};
      if (CUresult r = alloc_node(&proto, &a); r != CUDA_SUCCESS) return r;
      p->alloc.dptr = a.dptr;
      break;
    }
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return cuGraphAddMemFreeNode(out, g, deps, count, p->free.dptr);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: {
      Graph* graph = live_graph(g);
      if (!graph) return CUDA_ERROR_INVALID_VALUE;
      if (CUresult r = conditional_node(&proto, *graph, p->conditional); r != CUDA_SUCCESS) return r;
      if (CUresult r = add(out, g, deps, count, std::move(proto)); r != CUDA_SUCCESS) return r;
      p->conditional.phGraph_out = reinterpret_cast<Node*>(*out)->body_handles.data();
      return CUDA_SUCCESS;
    }
    default: return refuse("graph nodes of this type (batch memory operations, external semaphores)");
  }
  return add(out, g, deps, count, std::move(proto));
}

CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  return with_node(node, CU_GRAPH_NODE_TYPE_KERNEL, [&](Node& n) {
    *p = {};
    // A function and a kernel are one handle here; NVIDIA's runtime maps
    // the kernel back to the program's function.
    p->func = reinterpret_cast<CUfunction>(n.function);
    p->kern = reinterpret_cast<CUkernel>(n.function);
    p->ctx = reinterpret_cast<CUcontext>(current_context());
    p->gridDimX = n.grid[0];
    p->gridDimY = n.grid[1];
    p->gridDimZ = n.grid[2];
    p->blockDimX = n.block[0];
    p->blockDimY = n.block[1];
    p->blockDimZ = n.block[2];
    p->sharedMemBytes = n.shared_mem;
    p->kernelParams = n.param_ptrs.empty() ? nullptr : n.param_ptrs.data();
    return CUDA_SUCCESS;
  });
}

CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p) {
  return with_node(node, CU_GRAPH_NODE_TYPE_KERNEL, [&](Node& n) { return kernel_node(&n, p); });
}

CUresult cuGraphMemcpyNodeGetParams(CUgraphNode node, CUDA_MEMCPY3D* p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  return with_node(node, CU_GRAPH_NODE_TYPE_MEMCPY, [&](Node& n) { *p = n.copy; return CUDA_SUCCESS; });
}

CUresult cuGraphMemcpyNodeSetParams(CUgraphNode node, const CUDA_MEMCPY3D* p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  return with_node(node, CU_GRAPH_NODE_TYPE_MEMCPY, [&](Node& n) { n.copy = *p; return CUDA_SUCCESS; });
}

CUresult cuGraphMemsetNodeGetParams(CUgraphNode node, CUDA_MEMSET_NODE_PARAMS* p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  return with_node(node, CU_GRAPH_NODE_TYPE_MEMSET, [&](Node& n) { *p = n.memset; return CUDA_SUCCESS; });
}

CUresult cuGraphMemsetNodeSetParams(CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* p) {
  return with_node(node, CU_GRAPH_NODE_TYPE_MEMSET, [&](Node& n) { return memset_node(&n, p); });
}

CUresult cuGraphHostNodeGetParams(CUgraphNode node, CUDA_HOST_NODE_PARAMS* p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  return with_node(node, CU_GRAPH_NODE_TYPE_HOST, [&](Node& n) { *p = n.host; return CUDA_SUCCESS; });
}

CUresult cuGraphHostNodeSetParams(CUgraphNode node, const CUDA_HOST_NODE_PARAMS* p) {
  if (!p || !p->fn) return CUDA_ERROR_INVALID_VALUE;
  return with_node(node, CU_GRAPH_NODE_TYPE_HOST, [&](Node& n) { n.host = *p; return CUDA_SUCCESS; });
}

CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  return with_node(node, CU_GRAPH_NODE_TYPE_GRAPH, [&](Node& n) {
    *out = reinterpret_cast<CUgraph>(n.child.get());
    return CUDA_SUCCESS;
  });
}

CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode node, CUevent* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  return with_node(node, CU_GRAPH_NODE_TYPE_EVENT_RECORD, [&](Node& n) { *out = n.event; return CUDA_SUCCESS; });
}

CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode node, CUevent* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  return with_node(node, CU_GRAPH_NODE_TYPE_WAIT_EVENT, [&](Node& n) { *out = n.event; return CUDA_SUCCESS; });
}

CUresult cuGraphMemAllocNodeGetParams(CUgraphNode node, CUDA_MEM_ALLOC_NODE_PARAMS* p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  return with_node(node, CU_GRAPH_NODE_TYPE_MEM_ALLOC, [&](Node& n) {
    *p = {};
    p->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p->poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    p->dptr = n.allocation->ptr;
    CUdeviceptr base = 0;
    size_t size = 0;
    if (cuMemGetAddressRange_v2(&base, &size, n.allocation->ptr) == CUDA_SUCCESS) p->bytesize = size;
    return CUDA_SUCCESS;
  });
}

CUresult cuGraphMemFreeNodeGetParams(CUgraphNode node, CUdeviceptr* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  return with_node(node, CU_GRAPH_NODE_TYPE_MEM_FREE, [&](Node& n) { *out = n.free_ptr; return CUDA_SUCCESS; });
}

CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  Node* n = live_node(node);
  if (!n || !type) return CUDA_ERROR_INVALID_VALUE;
  *type = n->type;
  return CUDA_SUCCESS;
}

CUresult cuGraphGetNodes(CUgraph g, CUgraphNode* out, size_t* count) {
  Graph* graph = live_graph(g);
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> all;
  for (auto& n : graph->nodes) all.push_back(reinterpret_cast<CUgraphNode>(n.get()));
  return list(all, out, count);
}

CUresult cuGraphGetRootNodes(CUgraph g, CUgraphNode* out, size_t* count) {
  Graph* graph = live_graph(g);
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> roots;
  for (auto& n : graph->nodes)
    if (n->deps.empty()) roots.push_back(reinterpret_cast<CUgraphNode>(n.get()));
  return list(roots, out, count);
}

CUresult cuGraphGetEdges_v2(CUgraph g, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* data,
                            size_t* count) {
  Graph* graph = live_graph(g);
  if (!graph || !count || (from == nullptr) != (to == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> f, t;
  for (auto& n : graph->nodes) {
    for (Node* d : n->deps) {
      f.push_back(reinterpret_cast<CUgraphNode>(d));
      t.push_back(reinterpret_cast<CUgraphNode>(n.get()));
    }
  }
  if (data) {
    for (size_t i = 0; i < std::min(*count, f.size()); ++i) data[i] = {};
  }
  size_t n = *count;
  if (CUresult r = list(f, from, &n); r != CUDA_SUCCESS) return r;
  return list(t, to, count);
}

CUresult cuGraphNodeGetDependencies_v2(CUgraphNode node, CUgraphNode* out, CUgraphEdgeData* data,
                                       size_t* count) {
  Node* n = live_node(node);
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> deps;
  for (Node* d : n->deps) deps.push_back(reinterpret_cast<CUgraphNode>(d));
  if (data && count) {
    for (size_t i = 0; i < std::min(*count, deps.size()); ++i) data[i] = {};
  }
  return list(deps, out, count);
}

CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode node, CUgraphNode* out, CUgraphEdgeData* data,
                                         size_t* count) {
  Node* n = live_node(node);
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  const std::vector<CUgraphNode> dependents = dependents_of(*n);
  if (data && count) {
    for (size_t i = 0; i < std::min(*count, dependents.size()); ++i) data[i] = {};
  }
  return list(dependents, out, count);
}

CUresult cuGraphAddDependencies_v2(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                   const CUgraphEdgeData*, size_t count) {
  Graph* graph = live_graph(g);
  if (!graph || (count && (!from || !to))) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    Node* f = live_node(from[i]);
    Node* t = live_node(to[i]);
    if (!f || !t || f->owner != graph || t->owner != graph || f == t) return CUDA_ERROR_INVALID_VALUE;
    if (std::find(t->deps.begin(), t->deps.end(), f) == t->deps.end()) t->deps.push_back(f);
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphRemoveDependencies_v2(CUgraph g, const CUgraphNode* from, const CUgraphNode* to,
                                      const CUgraphEdgeData*, size_t count) {
  Graph* graph = live_graph(g);
  if (!graph || (count && (!from || !to))) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    Node* t = live_node(to[i]);
    if (!t || t->owner != graph) return CUDA_ERROR_INVALID_VALUE;
    std::erase(t->deps, reinterpret_cast<Node*>(from[i]));
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroyNode(CUgraphNode node) {
  Node* n = live_node(node);
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  Graph* g = n->owner;
  std::lock_guard lock(graph::mu());
  for (auto& other : g->nodes) std::erase(other->deps, n);
  nodes().erase(n);
  if (n->child) forget_nodes(*n->child);
  for (auto& body : n->bodies) {
    graphs().erase(body.get());
    forget_nodes(*body);
  }
  std::erase_if(g->nodes, [n](const auto& p) { return p.get() == n; });
  return CUDA_SUCCESS;
}

CUresult cuGraphClone(CUgraph* out, CUgraph g) {
  Graph* graph = live_graph(g);
  if (!out || !graph) return CUDA_ERROR_INVALID_VALUE;
  std::unique_ptr<Graph> copy;
  {
    std::lock_guard lock(graph::mu());
    copy = clone(*graph, nullptr);
    remember_nodes(*copy);
    graphs().insert(copy.get());
  }
  *out = reinterpret_cast<CUgraph>(copy.release());
  return CUDA_SUCCESS;
}

CUresult cuGraphDebugDotPrint(CUgraph g, const char* path, unsigned) {
  Graph* graph = live_graph(g);
  if (!graph || !path) return CUDA_ERROR_INVALID_VALUE;
  FILE* f = std::fopen(path, "w");
  if (!f) return CUDA_ERROR_OPERATING_SYSTEM;
  std::fprintf(f, "digraph vgpu_graph {\n");
  for (auto& n : graph->nodes) {
    std::fprintf(f, "  n%p [label=\"type %d%s%s\"];\n", static_cast<void*>(n.get()), static_cast<int>(n->type),
                 n->function ? " " : "", n->function ? n->function->name.c_str() : "");
    for (Node* d : n->deps)
      std::fprintf(f, "  n%p -> n%p;\n", static_cast<void*>(d), static_cast<void*>(n.get()));
  }
  std::fprintf(f, "}\n");
  std::fclose(f);
  return CUDA_SUCCESS;
}

}  // extern "C"
