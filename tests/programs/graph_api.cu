// graph_api: the rest of the graph API that frameworks and samples call
// around the nodes themselves, results checked:
//   1. nodes of an instantiated graph switched off and on between launches;
//   2. generic node parameters, changed on the graph (instantiated copies keep
//      theirs) and on the instantiated graph;
//   3. kernel node attributes kept and read back, and copied to another node;
//   4. the event of an event-record node changed, on the graph and on the
//      instantiated graph;
//   5. a node found in a clone;
//   6. user objects: the destructor runs once the last graph or instantiated
//      graph holding a reference goes, not before.
#include <condition_variable>
#include <chrono>
#include <mutex>

#include "common.h"

__global__ void add_to(int* out, int k) { *out += k; }

namespace {

void put(int* dev, int v) { CUDA_OK(cudaMemcpy(dev, &v, sizeof v, cudaMemcpyHostToDevice)); }
int get(const int* dev) {
  int v = 0;
  CUDA_OK(cudaMemcpy(&v, dev, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

struct AddArgs {
  int* out;
  int k;
  void* ptrs[2] = {&out, &k};
};

cudaGraphNodeParams add_params(AddArgs* a) {
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeKernel;
  p.kernel.func = reinterpret_cast<void*>(add_to);
  p.kernel.gridDim = dim3(1);
  p.kernel.blockDim = dim3(1);
  p.kernel.kernelParams = a->ptrs;
  return p;
}

// Destructors may run on another thread (CUDA's own): the program waits for
// them as for any event.
struct Released {
  std::mutex mu;
  std::condition_variable cv;
  int count = 0;
  bool wait_for(int n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return count >= n; });
  }
  int now() {
    std::lock_guard lock(mu);
    return count;
  }
};

void CUDART_CB destroy(void* p) {
  auto* r = static_cast<Released*>(p);
  std::lock_guard lock(r->mu);
  ++r->count;
  r->cv.notify_all();
}

void launch(cudaGraphExec_t e, cudaStream_t s) {
  CUDA_OK(cudaGraphLaunch(e, s));
  CUDA_OK(cudaStreamSynchronize(s));
}

}  // namespace

int main() {
  vt::set_name("graph_api");
  int* out = nullptr;
  CUDA_OK(cudaMalloc(&out, sizeof(int)));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // A chain adding 1, 10 and 100.
  cudaGraph_t g;
  CUDA_OK(cudaGraphCreate(&g, 0));
  AddArgs a1{out, 1}, a10{out, 10}, a100{out, 100};
  cudaGraphNodeParams p1 = add_params(&a1), p10 = add_params(&a10), p100 = add_params(&a100);
  cudaGraphNode_t n1, n10, n100;
  CUDA_OK(cudaGraphAddNode(&n1, g, nullptr, nullptr, 0, &p1));
  CUDA_OK(cudaGraphAddNode(&n10, g, &n1, nullptr, 1, &p10));
  CUDA_OK(cudaGraphAddNode(&n100, g, &n10, nullptr, 1, &p100));
  cudaGraphExec_t e;
  CUDA_OK(cudaGraphInstantiate(&e, g, 0));
  put(out, 0);
  launch(e, s);
  vt::check(get(out) == 111, "the chain adds 111 (%d)", get(out));

  // 1. Switched off and on.
  CUDA_OK(cudaGraphNodeSetEnabled(e, n10, 0));
  unsigned enabled = 1;
  CUDA_OK(cudaGraphNodeGetEnabled(e, n10, &enabled));
  put(out, 0);
  launch(e, s);
  vt::check(enabled == 0 && get(out) == 101, "a node switched off is skipped (%d)", get(out));
  CUDA_OK(cudaGraphNodeSetEnabled(e, n10, 1));
  put(out, 0);
  launch(e, s);
  vt::check(get(out) == 111, "and runs again once switched on (%d)", get(out));

  // 2. Generic parameters: the graph's change reaches a new instantiation,
  // not the old one; the instantiated graph's change reaches it.
  AddArgs a2{out, 2};
  cudaGraphNodeParams p2 = add_params(&a2);
  CUDA_OK(cudaGraphNodeSetParams(n1, &p2));
  put(out, 0);
  launch(e, s);
  vt::check(get(out) == 111, "an instantiated graph keeps its parameters (%d)", get(out));
  cudaGraphExec_t e2;
  CUDA_OK(cudaGraphInstantiate(&e2, g, 0));
  put(out, 0);
  launch(e2, s);
  vt::check(get(out) == 112, "a new instantiation has the graph's new ones (%d)", get(out));
  AddArgs a1000{out, 1000};
  cudaGraphNodeParams p1000 = add_params(&a1000);
  CUDA_OK(cudaGraphExecNodeSetParams(e2, n100, &p1000));
  put(out, 0);
  launch(e2, s);
  vt::check(get(out) == 1012, "cudaGraphExecNodeSetParams (%d)", get(out));
  CUDA_OK(cudaGraphExecDestroy(e2));

  // 3. Kernel node attributes.
  cudaKernelNodeAttrValue v{};
  v.priority = 1;
  CUDA_OK(cudaGraphKernelNodeSetAttribute(n1, cudaKernelNodeAttributePriority, &v));
  cudaKernelNodeAttrValue w{};
  w.accessPolicyWindow.base_ptr = out;
  w.accessPolicyWindow.num_bytes = sizeof(int);
  w.accessPolicyWindow.hitRatio = 0.5f;
  w.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  w.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  CUDA_OK(cudaGraphKernelNodeSetAttribute(n1, cudaKernelNodeAttributeAccessPolicyWindow, &w));
  CUDA_OK(cudaGraphKernelNodeCopyAttributes(n10, n1));
  cudaKernelNodeAttrValue back{};
  CUDA_OK(cudaGraphKernelNodeGetAttribute(n10, cudaKernelNodeAttributeAccessPolicyWindow, &back));
  cudaKernelNodeAttrValue prio{};
  CUDA_OK(cudaGraphKernelNodeGetAttribute(n10, cudaKernelNodeAttributePriority, &prio));
  vt::check(back.accessPolicyWindow.base_ptr == out && back.accessPolicyWindow.hitRatio == 0.5f && prio.priority == 1,
            "kernel node attributes read back, copied to another node");
  cudaLaunchAttributeValue cluster{};
  CUDA_OK(cudaGraphKernelNodeGetAttribute(n1, cudaLaunchAttributeClusterDimension, &cluster));
  vt::check(cluster.clusterDim.x <= 1 && cluster.clusterDim.y <= 1 && cluster.clusterDim.z <= 1,
            "no thread block cluster unless asked for");

  // 4. Event nodes: the event a node records is changed on the graph, and
  // on an instantiated graph.
  cudaEvent_t start, first, second, third;
  for (cudaEvent_t* ev : {&start, &first, &second, &third}) CUDA_OK(cudaEventCreate(ev));
  cudaGraph_t eg;
  CUDA_OK(cudaGraphCreate(&eg, 0));
  cudaGraphNode_t kernel_node, record;
  CUDA_OK(cudaGraphAddNode(&kernel_node, eg, nullptr, nullptr, 0, &p1));
  CUDA_OK(cudaGraphAddEventRecordNode(&record, eg, &kernel_node, 1, first));
  CUDA_OK(cudaGraphEventRecordNodeSetEvent(record, second));
  cudaEvent_t now = nullptr;
  CUDA_OK(cudaGraphEventRecordNodeGetEvent(record, &now));
  vt::check(now == second, "an event-record node's new event");
  cudaGraphExec_t ee;
  CUDA_OK(cudaGraphInstantiate(&ee, eg, 0));
  CUDA_OK(cudaEventRecord(start, s));
  launch(ee, s);
  float ms = 0;
  vt::check(cudaEventElapsedTime(&ms, start, second) == cudaSuccess, "the graph recorded the new event");
  vt::check(cudaEventElapsedTime(&ms, start, first) != cudaSuccess, "and not the old one");
  CUDA_OK(cudaGraphExecEventRecordNodeSetEvent(ee, record, third));
  launch(ee, s);
  vt::check(cudaEventElapsedTime(&ms, start, third) == cudaSuccess, "the instantiated graph's node, changed");
  CUDA_OK(cudaGraphExecDestroy(ee));
  CUDA_OK(cudaGraphDestroy(eg));

  // 5. A node in a clone.
  cudaGraph_t copy;
  CUDA_OK(cudaGraphClone(&copy, g));
  cudaGraphNode_t found = nullptr;
  CUDA_OK(cudaGraphNodeFindInClone(&found, n100, copy));
  cudaKernelNodeParams kp{};
  CUDA_OK(cudaGraphKernelNodeGetParams(found, &kp));
  vt::check(found != n100 && kp.func == reinterpret_cast<void*>(add_to) &&
                *static_cast<int*>(kp.kernelParams[1]) == 100,
            "the clone's copy of a node, with its parameters");
  vt::check(cudaGraphNodeFindInClone(&found, n100, g) != cudaSuccess, "a graph is not its own clone");
  CUDA_OK(cudaGraphDestroy(copy));

  // 6. User objects.
  Released moved, shared;
  cudaUserObject_t a, b;
  CUDA_OK(cudaUserObjectCreate(&a, &moved, destroy, 1, cudaUserObjectNoDestructorSync));
  CUDA_OK(cudaUserObjectCreate(&b, &shared, destroy, 1, cudaUserObjectNoDestructorSync));
  CUDA_OK(cudaGraphRetainUserObject(g, a, 1, cudaGraphUserObjectMove));  // the program's reference
  CUDA_OK(cudaGraphRetainUserObject(g, b, 1, 0));                        // one of the graph's own
  CUDA_OK(cudaUserObjectRelease(b, 1));
  vt::check(shared.now() == 0, "a graph's reference keeps the object");
  cudaGraphExec_t held;
  CUDA_OK(cudaGraphInstantiate(&held, g, 0));
  CUDA_OK(cudaGraphExecDestroy(e));
  CUDA_OK(cudaGraphDestroy(g));
  launch(held, s);
  vt::check(moved.now() == 0 && shared.now() == 0, "an instantiated graph's references keep them");
  CUDA_OK(cudaGraphExecDestroy(held));
  vt::check(moved.wait_for(1) && shared.wait_for(1), "destructors run once the last holder goes (%d, %d)",
            moved.now(), shared.now());

  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFree(out));
  vt::pass();
}
