// graphs: CUDA graphs as course material and samples use them, results
// checked:
//   1. an explicit graph: memset -> kernel -> copy back -> host node, with a
//      child graph and an empty node; instantiated, launched twice, a kernel
//      node's parameters changed on the instantiated graph in between;
//   2. stream capture of copies, kernels and a host function, forked into a
//      second stream through an event and joined back; capture status while
//      capturing; the captured graph launched three times;
//   3. cudaGraphExecUpdate from a graph of the same shape;
//   4. a memory-allocation node whose memory a kernel node writes;
//   5. the queries: nodes, root nodes, edges, node types.
#include <cstring>
#include <vector>

#include "common.h"

__global__ void fill_index(int n, int* out, int offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i + offset;
}

__global__ void double_plus(int n, int* data, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 2 + k;
}

namespace {

constexpr int kN = 1000;
constexpr int kBlock = 128;
constexpr int kGrid = (kN + kBlock - 1) / kBlock;

struct Seen {
  const int* host;
  int first = -1;
  int last = -1;
  int calls = 0;
};

void CUDART_CB look(void* data) {
  auto* s = static_cast<Seen*>(data);
  s->first = s->host[0];
  s->last = s->host[kN - 1];
  ++s->calls;
}

cudaKernelNodeParams kernel_params(void* fn, void** args) {
  cudaKernelNodeParams p{};
  p.func = fn;
  p.gridDim = dim3(kGrid);
  p.blockDim = dim3(kBlock);
  p.kernelParams = args;
  return p;
}

}  // namespace

int main() {
  vt::set_name("graphs");
  int* dev = nullptr;
  int* host = nullptr;
  CUDA_OK(cudaMalloc(&dev, kN * sizeof(int)));
  CUDA_OK(cudaMallocHost(&host, kN * sizeof(int)));
  cudaStream_t s1, s2;
  CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));

  // 1. An explicit graph.
  cudaGraph_t g;
  CUDA_OK(cudaGraphCreate(&g, 0));
  cudaGraphNode_t set, fill, back, check, empty, child_node;
  cudaMemsetParams ms{};
  ms.dst = dev;
  ms.value = 0;
  ms.elementSize = 4;
  ms.width = kN;
  ms.height = 1;
  CUDA_OK(cudaGraphAddMemsetNode(&set, g, nullptr, 0, &ms));
  int n = kN, offset = 5;
  void* fill_args[] = {&n, &dev, &offset};
  cudaKernelNodeParams kp = kernel_params(reinterpret_cast<void*>(fill_index), fill_args);
  CUDA_OK(cudaGraphAddKernelNode(&fill, g, &set, 1, &kp));
  // A child graph that doubles and adds 1.
  cudaGraph_t child;
  CUDA_OK(cudaGraphCreate(&child, 0));
  cudaGraphNode_t dbl;
  int one = 1;
  void* dbl_args[] = {&n, &dev, &one};
  cudaKernelNodeParams dp = kernel_params(reinterpret_cast<void*>(double_plus), dbl_args);
  CUDA_OK(cudaGraphAddKernelNode(&dbl, child, nullptr, 0, &dp));
  CUDA_OK(cudaGraphAddChildGraphNode(&child_node, g, &fill, 1, child));
  CUDA_OK(cudaGraphAddEmptyNode(&empty, g, &child_node, 1));
  CUDA_OK(cudaGraphAddMemcpyNode1D(&back, g, &empty, 1, host, dev, kN * sizeof(int), cudaMemcpyDeviceToHost));
  Seen seen{host};
  cudaHostNodeParams hp{look, &seen};
  CUDA_OK(cudaGraphAddHostNode(&check, g, &back, 1, &hp));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  CUDA_OK(cudaGraphLaunch(exec, s1));
  CUDA_OK(cudaStreamSynchronize(s1));
  vt::check(seen.calls == 1 && seen.first == 11 && seen.last == (kN - 1 + 5) * 2 + 1,
            "explicit graph: memset, kernel, child graph, copy, host node (%d .. %d)", seen.first, seen.last);
  int offset2 = 100;
  void* fill_args2[] = {&n, &dev, &offset2};
  cudaKernelNodeParams kp2 = kernel_params(reinterpret_cast<void*>(fill_index), fill_args2);
  CUDA_OK(cudaGraphExecKernelNodeSetParams(exec, fill, &kp2));
  CUDA_OK(cudaGraphLaunch(exec, s1));
  CUDA_OK(cudaStreamSynchronize(s1));
  vt::check(seen.calls == 2 && seen.first == 201, "a kernel node's new parameters on the instantiated graph (%d)",
            seen.first);

  // 5. Queries.
  size_t count = 0;
  CUDA_OK(cudaGraphGetNodes(g, nullptr, &count));
  vt::check(count == 6, "cudaGraphGetNodes: %zu nodes", count);
  CUDA_OK(cudaGraphGetRootNodes(g, nullptr, &count));
  vt::check(count == 1, "one root node (%zu)", count);
  CUDA_OK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &count));
  vt::check(count == 5, "five edges (%zu)", count);
  cudaGraphNodeType type;
  CUDA_OK(cudaGraphNodeGetType(child_node, &type));
  vt::check(type == cudaGraphNodeTypeGraph, "a child graph node's type");

  // 2. Stream capture, forked into s2 and joined.
  std::vector<int> input(kN), output(kN, -1);
  for (int i = 0; i < kN; ++i) input[i] = i;
  int* dev2 = nullptr;
  CUDA_OK(cudaMalloc(&dev2, kN * sizeof(int)));
  cudaEvent_t fork, joined;
  CUDA_OK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CUDA_OK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
  Seen captured_seen{host};
  CUDA_OK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CUDA_OK(cudaStreamIsCapturing(s1, &status));
  vt::check(status == cudaStreamCaptureStatusActive, "cudaStreamIsCapturing: active");
  CUDA_OK(cudaMemcpyAsync(dev, input.data(), kN * sizeof(int), cudaMemcpyHostToDevice, s1));
  CUDA_OK(cudaEventRecord(fork, s1));
  CUDA_OK(cudaStreamWaitEvent(s2, fork, 0));
  fill_index<<<kGrid, kBlock, 0, s2>>>(kN, dev2, 7);  // in s2, beside s1's work
  CUDA_OK(cudaEventRecord(joined, s2));
  double_plus<<<kGrid, kBlock, 0, s1>>>(kN, dev, 3);
  CUDA_OK(cudaStreamWaitEvent(s1, joined, 0));
  CUDA_OK(cudaMemcpyAsync(host, dev, kN * sizeof(int), cudaMemcpyDeviceToHost, s1));
  CUDA_OK(cudaLaunchHostFunc(s1, look, &captured_seen));
  CUDA_OK(cudaMemcpyAsync(output.data(), dev2, kN * sizeof(int), cudaMemcpyDeviceToHost, s1));
  cudaGraph_t captured;
  CUDA_OK(cudaStreamEndCapture(s1, &captured));
  CUDA_OK(cudaStreamIsCapturing(s1, &status));
  vt::check(status == cudaStreamCaptureStatusNone && captured_seen.calls == 0,
            "nothing ran while capturing; capture ended");
  CUDA_OK(cudaGraphGetNodes(captured, nullptr, &count));
  vt::check(count == 6, "the captured graph has 6 nodes (%zu)", count);
  cudaGraphExec_t cexec;
  CUDA_OK(cudaGraphInstantiate(&cexec, captured, 0));
  for (int round = 0; round < 3; ++round) CUDA_OK(cudaGraphLaunch(cexec, s1));
  CUDA_OK(cudaStreamSynchronize(s1));
  vt::check(captured_seen.calls == 3 && captured_seen.first == 3 && captured_seen.last == (kN - 1) * 2 + 3 &&
                output[0] == 7 && output[kN - 1] == kN - 1 + 7,
            "the captured graph, launched three times: copies, both streams' kernels, host function");

  // 3. Update an instantiated graph from one of the same shape.
  cudaGraph_t g2;
  CUDA_OK(cudaGraphCreate(&g2, 0));
  cudaGraphNode_t a, b;
  int offset3 = 1000;
  void* args3[] = {&n, &dev, &offset3};
  cudaKernelNodeParams kp3 = kernel_params(reinterpret_cast<void*>(fill_index), args3);
  CUDA_OK(cudaGraphAddKernelNode(&a, g2, nullptr, 0, &kp3));
  CUDA_OK(cudaGraphAddMemcpyNode1D(&b, g2, &a, 1, host, dev, kN * sizeof(int), cudaMemcpyDeviceToHost));
  cudaGraphExec_t exec2;
  CUDA_OK(cudaGraphInstantiate(&exec2, g2, 0));
  offset3 = 2000;
  CUDA_OK(cudaGraphKernelNodeSetParams(a, &kp3));
  cudaGraphExecUpdateResultInfo info{};
  CUDA_OK(cudaGraphExecUpdate(exec2, g2, &info));
  CUDA_OK(cudaGraphLaunch(exec2, s1));
  CUDA_OK(cudaStreamSynchronize(s1));
  vt::check(host[0] == 2000 && info.result == cudaGraphExecUpdateSuccess, "cudaGraphExecUpdate (%d)", host[0]);

  // 4. A memory-allocation node.
  cudaGraph_t g3;
  CUDA_OK(cudaGraphCreate(&g3, 0));
  cudaMemAllocNodeParams ap{};
  ap.poolProps.allocType = cudaMemAllocationTypePinned;
  ap.poolProps.location.type = cudaMemLocationTypeDevice;
  ap.poolProps.location.id = 0;
  ap.bytesize = kN * sizeof(int);
  cudaGraphNode_t alloc, use, copy_out, free_node;
  CUDA_OK(cudaGraphAddMemAllocNode(&alloc, g3, nullptr, 0, &ap));
  int* graph_mem = static_cast<int*>(ap.dptr);
  int offset4 = 42;
  void* args4[] = {&n, &graph_mem, &offset4};
  cudaKernelNodeParams kp4 = kernel_params(reinterpret_cast<void*>(fill_index), args4);
  CUDA_OK(cudaGraphAddKernelNode(&use, g3, &alloc, 1, &kp4));
  CUDA_OK(cudaGraphAddMemcpyNode1D(&copy_out, g3, &use, 1, host, graph_mem, kN * sizeof(int),
                                   cudaMemcpyDeviceToHost));
  CUDA_OK(cudaGraphAddMemFreeNode(&free_node, g3, &copy_out, 1, graph_mem));
  cudaGraphExec_t exec3;
  CUDA_OK(cudaGraphInstantiate(&exec3, g3, 0));
  CUDA_OK(cudaGraphLaunch(exec3, s1));
  CUDA_OK(cudaStreamSynchronize(s1));
  vt::check(graph_mem != nullptr && host[0] == 42 && host[kN - 1] == kN - 1 + 42,
            "a memory-allocation node's memory, written by a kernel node");

  for (cudaGraphExec_t e : {exec, cexec, exec2, exec3}) CUDA_OK(cudaGraphExecDestroy(e));
  for (cudaGraph_t gr : {g, child, captured, g2, g3}) CUDA_OK(cudaGraphDestroy(gr));
  CUDA_OK(cudaFree(dev));
  CUDA_OK(cudaFree(dev2));
  CUDA_OK(cudaFreeHost(host));
  CUDA_OK(cudaEventDestroy(fork));
  CUDA_OK(cudaEventDestroy(joined));
  CUDA_OK(cudaStreamDestroy(s1));
  CUDA_OK(cudaStreamDestroy(s2));
  vt::pass();
}
