// Instantiated graphs: a graph's nodes copied in an order that respects every
// dependency (child graphs flattened into it), launched by issuing each in
// turn into the launch stream (graph.h). A conditional node's bodies are
// ordered the same way when instantiated, and chosen when a launch reaches
// the node.
#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_set>

#include "graph.h"
#include "stream_capture.h"

using namespace vgpu;
using namespace vgpu::driver;
using namespace vgpu::driver::graph;

namespace {

using Order = std::vector<const Node*>;

struct Exec {
  std::shared_ptr<Graph> graph;  // the instantiated copy (nodes stay put)
  Order order;
  std::map<const Node*, std::vector<Order>> bodies;  // a conditional node's bodies, ordered
  std::vector<Conditional> resets;                   // handles set to their default at each launch
  std::map<const Node*, Node*> from_source;  // the program's node -> its copy here
};

std::mutex& mu() {
  static auto* m = new std::mutex;
  return *m;
}
std::unordered_set<Exec*>& execs() {
  static auto* s = new std::unordered_set<Exec*>;  // leaked: used until exit
  return *s;
}

Exec* live_exec(CUgraphExec e) {
  std::lock_guard lock(mu());
  auto* p = reinterpret_cast<Exec*>(e);
  return execs().count(p) ? p : nullptr;
}

// Kahn's order, ties in the order nodes were added; child graphs' nodes in
// place of their node. False if the graph has a cycle.
bool order(const Graph& g, std::vector<const Node*>* out) {
  std::map<const Node*, size_t> waiting;
  for (const auto& n : g.nodes) waiting[n.get()] = n->deps.size();
  std::vector<const Node*> done;
  while (done.size() < g.nodes.size()) {
    const Node* next = nullptr;
    for (const auto& n : g.nodes) {
      if (waiting[n.get()] == 0) {
        next = n.get();
        break;
      }
    }
    if (!next) return false;
    waiting[next] = SIZE_MAX;
    done.push_back(next);
    for (const auto& n : g.nodes) {
      for (const Node* d : n->deps)
        if (d == next) --waiting[n.get()];
    }
  }
  for (const Node* n : done) {
    if (n->type == CU_GRAPH_NODE_TYPE_GRAPH && n->child) {
      if (!order(*n->child, out)) return false;
    } else {
      out->push_back(n);
    }
  }
  return true;
}

// Orders `g` into `out` and each conditional node's bodies into e->bodies.
bool plan(const Graph& g, Exec* e, Order* out) {
  const size_t first = out->size();
  if (!order(g, out)) return false;
  for (size_t i = first; i < out->size(); ++i) {
    const Node* n = (*out)[i];
    if (n->type != CU_GRAPH_NODE_TYPE_CONDITIONAL) continue;
    auto& orders = e->bodies[n];
    orders.resize(n->bodies.size());
    for (size_t b = 0; b < n->bodies.size(); ++b)
      if (!plan(*n->bodies[b], e, &orders[b])) return false;
  }
  return true;
}

// The handles of `g`, its child graphs and its bodies that a launch resets.
void gather_resets(const Graph& g, std::vector<Conditional>* out) {
  for (const Conditional& c : g.conditionals)
    if (c.assign_default) out->push_back(c);
  for (const auto& n : g.nodes) {
    if (n->child) gather_resets(*n->child, out);
    for (const auto& body : n->bodies) gather_resets(*body, out);
  }
}

CUresult run(const Exec& e, const Order& order, CUstream stream);

// The handle's value once the work before it in `stream` is done.
CUresult read_condition(CUgraphConditionalHandle h, CUstream stream, unsigned* value) {
  if (CUresult r = cuMemcpyDtoHAsync_v2(value, h, sizeof *value, stream); r != CUDA_SUCCESS) return r;
  return cuStreamSynchronize(stream);
}

CUresult run_conditional(const Exec& e, const Node& n, CUstream stream) {
  const std::vector<Order>& bodies = e.bodies.at(&n);
  unsigned value = 0;
  if (CUresult r = read_condition(n.cond_handle, stream, &value); r != CUDA_SUCCESS) return r;
  switch (n.cond_type) {
    case CU_GRAPH_COND_TYPE_IF:
      if (value) return run(e, bodies[0], stream);
      return bodies.size() == 2 ? run(e, bodies[1], stream) : CUDA_SUCCESS;
    case CU_GRAPH_COND_TYPE_WHILE:
      while (value) {
        if (CUresult r = run(e, bodies[0], stream); r != CUDA_SUCCESS) return r;
        if (CUresult r = read_condition(n.cond_handle, stream, &value); r != CUDA_SUCCESS) return r;
      }
      return CUDA_SUCCESS;
    case CU_GRAPH_COND_TYPE_SWITCH: return value < bodies.size() ? run(e, bodies[value], stream) : CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult run(const Exec& e, const Order& order, CUstream stream) {
  for (const Node* n : order) {
    if (!n->enabled) continue;  // a disabled node is an empty one
    const CUresult r =
        n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL ? run_conditional(e, *n, stream) : issue(*n, stream);
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

CUresult instantiate(CUgraphExec* out, CUgraph g) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = live_graph(g);
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  auto e = std::make_unique<Exec>();
  std::vector<std::pair<const Node*, Node*>> map;
  e->graph = clone(*graph, &map);
  for (auto& [source, copy] : map) e->from_source[source] = copy;
  if (!plan(*e->graph, e.get(), &e->order)) return CUDA_ERROR_INVALID_VALUE;  // a cycle
  gather_resets(*e->graph, &e->resets);
  std::lock_guard lock(mu());
  execs().insert(e.get());
  *out = reinterpret_cast<CUgraphExec>(e.release());
  return CUDA_SUCCESS;
}

// The copy in `e` of the program's node `node` (of the given type).
Node* exec_node(Exec* e, CUgraphNode node) {
  auto it = e->from_source.find(reinterpret_cast<const Node*>(node));
  return it == e->from_source.end() ? nullptr : it->second;
}
Node* exec_node(Exec* e, CUgraphNode node, CUgraphNodeType type) {
  Node* n = exec_node(e, node);
  return n && n->type == type ? n : nullptr;
}

}  // namespace

extern "C" {

CUresult cuGraphInstantiateWithFlags(CUgraphExec* out, CUgraph g, unsigned long long) {
  return instantiate(out, g);
}

CUresult cuGraphInstantiateWithParams(CUgraphExec* out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS* p) {
  const CUresult r = instantiate(out, g);
  if (p) {
    p->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    p->hErrNode_out = nullptr;
  }
  return r;
}

CUresult cuGraphExecDestroy(CUgraphExec exec) {
  Exec* e = live_exec(exec);
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  {
    std::lock_guard lock(mu());
    execs().erase(e);
  }
  delete e;
  return CUDA_SUCCESS;
}

CUresult cuGraphUpload(CUgraphExec exec, CUstream) {
  return live_exec(exec) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Each node's work goes to `stream` in dependency order: the work after a
// node waits for it, as in the graph (the nodes of one launch do not run
// side by side).
CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  Exec* e = live_exec(exec);
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  if (capture::capturing(stream)) {
    // Launched into a capture: the graph becomes a child node of it.
    Node child;
    child.type = CU_GRAPH_NODE_TYPE_GRAPH;
    child.child = clone(*e->graph, nullptr);
    return capture::add(stream, std::move(child));
  }
  for (const Conditional& c : e->resets) {
    if (CUresult r = cuMemsetD32Async(c.cell->ptr, c.default_value, 1, stream); r != CUDA_SUCCESS) return r;
  }
  return run(*e, e->order, stream);
}

// Updates the parameters of an instantiated graph from a graph of the same
// shape (the same kinds of node, added in the same order).
CUresult cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph g, CUgraphExecUpdateResultInfo* info) {
  Exec* e = live_exec(exec);
  Graph* graph = live_graph(g);
  if (!e || !graph) return CUDA_ERROR_INVALID_VALUE;
  auto fail = [&](CUgraphExecUpdateResult why) {
    if (info) *info = {why, nullptr, nullptr};
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  };
  if (graph->nodes.size() != e->graph->nodes.size()) return fail(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    if (graph->nodes[i]->type != e->graph->nodes[i]->type)
      return fail(CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
    if (graph->nodes[i]->deps.size() != e->graph->nodes[i]->deps.size())
      return fail(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  }
  CUgraphExec fresh = nullptr;
  if (CUresult r = instantiate(&fresh, g); r != CUDA_SUCCESS) return r;
  Exec* f = live_exec(fresh);
  // The program's nodes of the graph it was instantiated from still name
  // theirs: map them onto the new copies, in the same positions.
  std::map<const Node*, Node*> from_source;
  for (auto& [source, old_copy] : e->from_source) {
    for (size_t i = 0; i < e->graph->nodes.size(); ++i)
      if (e->graph->nodes[i].get() == old_copy) from_source[source] = f->graph->nodes[i].get();
  }
  for (auto& [source, copy] : f->from_source) from_source[source] = copy;
  std::swap(e->graph, f->graph);
  std::swap(e->order, f->order);
  std::swap(e->bodies, f->bodies);
  std::swap(e->resets, f->resets);
  e->from_source = std::move(from_source);
  f->from_source.clear();
  cuGraphExecDestroy(fresh);
  if (info) *info = {CU_GRAPH_EXEC_UPDATE_SUCCESS, nullptr, nullptr};
  return CUDA_SUCCESS;
}

CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* p) {
  Exec* e = live_exec(exec);
  Node* n = e ? exec_node(e, node, CU_GRAPH_NODE_TYPE_KERNEL) : nullptr;
  if (!n || !p) return CUDA_ERROR_INVALID_VALUE;
  const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
  const unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
  return set_kernel(n, p->func, p->kern, grid, block, p->sharedMemBytes, p->kernelParams, p->extra);
}

CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D* p, CUcontext) {
  Exec* e = live_exec(exec);
  Node* n = e ? exec_node(e, node, CU_GRAPH_NODE_TYPE_MEMCPY) : nullptr;
  if (!n || !p) return CUDA_ERROR_INVALID_VALUE;
  n->copy = *p;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec exec, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* p,
                                        CUcontext) {
  Exec* e = live_exec(exec);
  Node* n = e ? exec_node(e, node, CU_GRAPH_NODE_TYPE_MEMSET) : nullptr;
  if (!n || !p || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4))
    return CUDA_ERROR_INVALID_VALUE;
  n->memset = *p;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecHostNodeSetParams(CUgraphExec exec, CUgraphNode node, const CUDA_HOST_NODE_PARAMS* p) {
  Exec* e = live_exec(exec);
  Node* n = e ? exec_node(e, node, CU_GRAPH_NODE_TYPE_HOST) : nullptr;
  if (!n || !p || !p->fn) return CUDA_ERROR_INVALID_VALUE;
  n->host = *p;
  return CUDA_SUCCESS;
}

// Kernel, copy and memset nodes of an instantiated graph can be switched off
// and on between launches.
CUresult cuGraphNodeSetEnabled(CUgraphExec exec, CUgraphNode node, unsigned enabled) {
  Exec* e = live_exec(exec);
  Node* n = e ? exec_node(e, node) : nullptr;
  if (!n || (n->type != CU_GRAPH_NODE_TYPE_KERNEL && n->type != CU_GRAPH_NODE_TYPE_MEMCPY &&
             n->type != CU_GRAPH_NODE_TYPE_MEMSET))
    return CUDA_ERROR_INVALID_VALUE;
  n->enabled = enabled != 0;
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetEnabled(CUgraphExec exec, CUgraphNode node, unsigned* enabled) {
  Exec* e = live_exec(exec);
  Node* n = e ? exec_node(e, node) : nullptr;
  if (!n || !enabled) return CUDA_ERROR_INVALID_VALUE;
  *enabled = n->enabled ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecNodeSetParams(CUgraphExec exec, CUgraphNode node, CUgraphNodeParams* p) {
  Exec* e = live_exec(exec);
  return set_params(e ? exec_node(e, node) : nullptr, p);
}

CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec exec, CUgraphNode node, CUevent event) {
  Exec* e = live_exec(exec);
  Node* n = e ? exec_node(e, node, CU_GRAPH_NODE_TYPE_EVENT_RECORD) : nullptr;
  if (!n || !event) return CUDA_ERROR_INVALID_VALUE;
  n->event = event;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec exec, CUgraphNode node, CUevent event) {
  Exec* e = live_exec(exec);
  Node* n = e ? exec_node(e, node, CU_GRAPH_NODE_TYPE_WAIT_EVENT) : nullptr;
  if (!n || !event) return CUDA_ERROR_INVALID_VALUE;
  n->event = event;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecGetFlags(CUgraphExec exec, cuuint64_t* flags) {
  if (!live_exec(exec) || !flags) return CUDA_ERROR_INVALID_VALUE;
  *flags = 0;
  return CUDA_SUCCESS;
}

// Graph memory is the tenant's ordinary device memory (graph.cpp): there is
// no separate reserve to report or trim.
CUresult cuDeviceGraphMemTrim(CUdevice dev) { return check_device(dev); }

CUresult cuDeviceGetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute, void* value) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  *static_cast<cuuint64_t*>(value) = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceSetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute, void* value) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  return check_device(dev);
}

}  // extern "C"
