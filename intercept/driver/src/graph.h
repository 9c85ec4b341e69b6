// CUDA graphs in the guest: a graph is a record of work (nodes and their
// dependencies), kept here; launching an instantiated graph issues each
// node's work, in an order that respects every dependency, into the launch
// stream, as the same calls made one by one would. So the host schedules,
// checks and charges each node as it would the call outside a graph, and a
// graph launch holds the GPU no longer than its nodes do one after another.
//
// Stream capture (stream_capture.cpp) builds a graph from the work a program
// queues into a capturing stream instead of running it.
//
// Conditional nodes (if, if/else, while, switch) choose at launch time which
// of their body graphs run, by the value of a conditional handle that a
// kernel earlier in the graph sets. The value lives in a 4-byte cell of the
// tenant's device memory and the handle is the cell's address: a kernel's
// cudaGraphSetConditional writes it (on sim, the plug-in does, see
// vgpu_sim_graph_set_conditional). When a launch reaches a conditional node,
// it waits for the work before it and reads the cell, so the launching
// thread blocks there as it would on cudaStreamSynchronize.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "driver_state.h"

namespace vgpu::driver::graph {

struct Graph;

// Device memory a memory-allocation node made: freed when the last graph or
// instantiated graph holding the node goes.
struct DeviceBlock {
  CUdeviceptr ptr = 0;
  ~DeviceBlock();
};

// A user object (cuUserObjectCreate): a program's resource whose destructor
// runs when the last reference, the program's or a graph's, goes
// (user_objects.cpp).
struct UserObject;
void retain(UserObject* o, unsigned count);
// `after_work`: the reference belonged to a graph that may have been
// launched, so the destructor waits for the context's work to finish.
void release(UserObject* o, unsigned count, bool after_work);

// A conditional handle: its cell and what a launch resets it to.
struct Conditional {
  std::shared_ptr<DeviceBlock> cell;
  unsigned default_value = 0;
  bool assign_default = false;  // CU_GRAPH_COND_ASSIGN_DEFAULT: reset at each launch
};

struct Node {
  Graph* owner = nullptr;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  std::vector<Node*> deps;  // the nodes this one waits for (same graph)

  // kernel: the function and its packed parameters (copied when added).
  Function* function = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, shared_mem = 0;
  std::vector<uint8_t> params;
  std::vector<void*> param_ptrs;  // into `params`, for cuGraphKernelNodeGetParams
  unsigned cluster[3] = {1, 1, 1};  // a captured launch's thread block cluster shape
  CUDA_MEMCPY3D copy{};
  CUDA_MEMSET_NODE_PARAMS memset{};
  CUDA_HOST_NODE_PARAMS host{};
  std::shared_ptr<Graph> child;  // a clone of the child graph
  CUevent event = nullptr;       // event record / wait
  std::shared_ptr<DeviceBlock> allocation;  // memory allocation node
  CUdeviceptr free_ptr = 0;                 // memory free node
  // conditional: which kind, the handle it reads, its body graphs (owned by
  // the node) and their handles as the program got them (phGraph_out).
  CUgraphConditionalNodeType cond_type = CU_GRAPH_COND_TYPE_IF;
  CUgraphConditionalHandle cond_handle = 0;
  std::vector<std::shared_ptr<Graph>> bodies;
  std::vector<CUgraph> body_handles;
  // kernel: launch attributes set on the node (hints kept to be read back;
  // the cluster shape is `cluster` above).
  std::map<int, CUlaunchAttributeValue> attributes;
  bool enabled = true;              // cuGraphNodeSetEnabled, on an instantiated graph
  const Node* cloned_from = nullptr;  // cuGraphNodeFindInClone
};

struct Graph {
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<Conditional> conditionals;  // the handles created on this graph
  Node* parent = nullptr;                 // the conditional node a body belongs to
  std::map<UserObject*, unsigned> user_objects;  // references this graph holds
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();  // gives its user object references back
};

// Handles: a CUgraph is a Graph*, a CUgraphNode a Node*, each checked
// against the live ones before use.
Graph* live_graph(CUgraph g);
Node* live_node(CUgraphNode n);
// A new graph the program owns (cuGraphCreate, cuStreamEndCapture).
Graph* create();

// Adds a node of `proto`'s type and parameters to `g` after `deps` (which
// must be nodes of g).
CUresult add_node(Graph* g, const CUgraphNode* deps, size_t count, Node proto, Node** out);

// Kernel node parameters: the function and a packed copy of its arguments.
CUresult set_kernel(Node* n, CUfunction fn, CUkernel kern, const unsigned grid[3],
                    const unsigned block[3], unsigned shared_mem, void** params, void** extra);
// The same, from arguments a launch already packed (stream capture).
CUresult set_kernel_packed(Node* n, Function* f, const unsigned grid[3], const unsigned block[3],
                           unsigned shared_mem, std::vector<uint8_t> params);

// A deep copy of `g` (child graphs included); `map` gets old node -> new.
std::unique_ptr<Graph> clone(const Graph& g, std::vector<std::pair<const Node*, Node*>>* map);

// Sets a node's parameters from the generic form (cuGraphNodeSetParams and
// cuGraphExecNodeSetParams): the kinds whose parameters a program may change.
CUresult set_params(Node* n, const CUgraphNodeParams* p);

// Issues one node's work into `stream` (launch time); not conditional nodes.
CUresult issue(const Node& n, CUstream stream);

// The conditional handle `h` if `g` or a graph enclosing it made it.
const Conditional* find_conditional(const Graph& g, CUgraphConditionalHandle h);

}  // namespace vgpu::driver::graph
