// The rest of a graph node's API: generic parameters, kernel node launch
// attributes, event nodes' events, and finding a node in a clone.
#include <cstring>

#include "graph.h"

using namespace vgpu;
using namespace vgpu::driver;
using namespace vgpu::driver::graph;

namespace {

Node* kernel(CUgraphNode handle) {
  Node* n = live_node(handle);
  return n && n->type == CU_GRAPH_NODE_TYPE_KERNEL ? n : nullptr;
}

}  // namespace

extern "C" {

CUresult cuGraphNodeSetParams(CUgraphNode node, CUgraphNodeParams* p) { return set_params(live_node(node), p); }

// Attributes that change where or how fast a kernel runs, not what it
// computes, are kept and read back; the cluster shape is the launch's.
CUresult cuGraphKernelNodeSetAttribute(CUgraphNode node, CUkernelNodeAttrID attr, const CUkernelNodeAttrValue* value) {
  Node* n = kernel(node);
  if (!n || !value) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: {
      const auto& c = value->clusterDim;
      if (c.x == 0 || c.y == 0 || c.z == 0) return CUDA_ERROR_INVALID_VALUE;
      if (n->grid[0] % c.x || n->grid[1] % c.y || n->grid[2] % c.z) return CUDA_ERROR_INVALID_VALUE;
      n->cluster[0] = c.x, n->cluster[1] = c.y, n->cluster[2] = c.z;
      return CUDA_SUCCESS;
    }
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
      if (value->cooperative) return refuse("cooperative kernel nodes in graphs");
      n->attributes[attr] = *value;
      return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
      n->attributes[attr] = *value;
      return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
      if (value->deviceUpdatableKernelNode.deviceUpdatable)
        return refuse("device-updatable kernel nodes (cudaGraphKernelNodeUpdatesApply)");
      n->attributes[attr] = *value;
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;  // not an attribute of graph kernel nodes
  }
}

CUresult cuGraphKernelNodeGetAttribute(CUgraphNode node, CUkernelNodeAttrID attr, CUkernelNodeAttrValue* value) {
  Node* n = kernel(node);
  if (!n || !value) return CUDA_ERROR_INVALID_VALUE;
  std::memset(value, 0, sizeof *value);
  if (attr == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
    value->clusterDim = {n->cluster[0], n->cluster[1], n->cluster[2]};
    return CUDA_SUCCESS;
  }
  if (auto it = n->attributes.find(attr); it != n->attributes.end()) *value = it->second;
  return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src) {
  Node* d = kernel(dst);
  Node* s = kernel(src);
  if (!d || !s) return CUDA_ERROR_INVALID_VALUE;
  d->attributes = s->attributes;
  std::memcpy(d->cluster, s->cluster, sizeof d->cluster);
  return CUDA_SUCCESS;
}

CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode node, CUevent event) {
  Node* n = live_node(node);
  if (!n || n->type != CU_GRAPH_NODE_TYPE_EVENT_RECORD || !event) return CUDA_ERROR_INVALID_VALUE;
  n->event = event;
  return CUDA_SUCCESS;
}

CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode node, CUevent event) {
  Node* n = live_node(node);
  if (!n || n->type != CU_GRAPH_NODE_TYPE_WAIT_EVENT || !event) return CUDA_ERROR_INVALID_VALUE;
  n->event = event;
  return CUDA_SUCCESS;
}

// The node of `cloned` (cuGraphClone's result) made from `original`.
CUresult cuGraphNodeFindInClone(CUgraphNode* out, CUgraphNode original, CUgraph cloned) {
  Graph* g = live_graph(cloned);
  const Node* from = live_node(original);
  if (!out || !g || !from) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& n : g->nodes) {
    if (n->cloned_from == from) {
      *out = reinterpret_cast<CUgraphNode>(n.get());
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
