// graph_conditionals: conditional graph nodes, as NVIDIA's
// graphConditionalNodes sample and iterative solvers use them, results
// checked:
//   1. if: a kernel sets the condition from data; the body runs or not;
//   2. if/else (two bodies);
//   3. do-while: a handle reset to 1 at each launch, the body captured into
//      the node's graph with cudaStreamBeginCaptureToGraph, counting down;
//   4. while inside a capture: the handle made during the capture, the node
//      added by hand after the captured kernel, the capture continued after
//      it (cudaStreamUpdateCaptureDependencies), launched with 0 and 5;
//   5. switch over four bodies, and a value past the last (none runs);
//   6. an if inside a while's body, on a handle of the enclosing graph.
// On a backend that cannot run conditional nodes, cudaGraphConditionalHandleCreate
// is refused by name (the program fails there, saying so).
#include "common.h"

__global__ void set_if_odd(const int* value, cudaGraphConditionalHandle h) {
  cudaGraphSetConditional(h, *value & 1);
}

__global__ void set_to(const int* value, cudaGraphConditionalHandle h) {
  cudaGraphSetConditional(h, static_cast<unsigned>(*value));
}

__global__ void add_to(int* out, int k) { *out += k; }

// A kernel without parameters in a graph node.
__device__ int ticks;
__global__ void tick() { ++ticks; }

// One turn of a loop: counts down, and ends the loop when the count is 0.
__global__ void count_down(int* counter, int* turns, cudaGraphConditionalHandle h) {
  ++*turns;
  if (--*counter <= 0) cudaGraphSetConditional(h, 0);
}

// The sample's captured while: steps a counter towards 0, the condition is
// what is left.
__global__ void step_down(int* counter, int* turns, cudaGraphConditionalHandle h) {
  if (*counter > 0) {
    --*counter;
    ++*turns;
  }
  cudaGraphSetConditional(h, static_cast<unsigned>(*counter));
}

namespace {

// Device ints the checks read back.
struct Cells {
  int* d = nullptr;
  int* value() { return d; }
  int* out() { return d + 1; }
  int* counter() { return d + 2; }
  int* turns() { return d + 3; }
  int* done() { return d + 4; }
};

void put(int* dev, int v) { CUDA_OK(cudaMemcpy(dev, &v, sizeof v, cudaMemcpyHostToDevice)); }
int get(const int* dev) {
  int v = 0;
  CUDA_OK(cudaMemcpy(&v, dev, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

cudaGraphNode_t kernel_node(cudaGraph_t g, const cudaGraphNode_t* deps, size_t n, void* fn, void** args) {
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeKernel;
  p.kernel.func = fn;
  p.kernel.gridDim = dim3(1);
  p.kernel.blockDim = dim3(1);
  p.kernel.kernelParams = args;
  cudaGraphNode_t node;
  CUDA_OK(cudaGraphAddNode(&node, g, deps, nullptr, n, &p));
  return node;
}

// A conditional node of `type` with `size` bodies; returns their graphs.
cudaGraph_t* conditional(cudaGraph_t g, const cudaGraphNode_t* deps, size_t n, cudaGraphConditionalHandle h,
                         cudaGraphConditionalNodeType type, unsigned size, cudaGraphNode_t* node = nullptr) {
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeConditional;
  p.conditional.handle = h;
  p.conditional.type = type;
  p.conditional.size = size;
  cudaGraphNode_t made;
  CUDA_OK(cudaGraphAddNode(&made, g, deps, nullptr, n, &p));
  if (node) *node = made;
  return p.conditional.phGraph_out;
}

void launch(cudaGraphExec_t e, cudaStream_t s) {
  CUDA_OK(cudaGraphLaunch(e, s));
  CUDA_OK(cudaStreamSynchronize(s));
}

}  // namespace

int main() {
  vt::set_name("graph_conditionals");
  Cells c;
  CUDA_OK(cudaMalloc(&c.d, 8 * sizeof(int)));
  CUDA_OK(cudaMemset(c.d, 0, 8 * sizeof(int)));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* value = c.value();
  int* out = c.out();
  int* counter = c.counter();
  int* turns = c.turns();
  int* done = c.done();

  // 1. if: A sets the condition, B [ C ] adds 10 when the value is odd.
  {
    cudaGraph_t g;
    CUDA_OK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h;
    const cudaError_t made = cudaGraphConditionalHandleCreate(&h, g);
    if (made != cudaSuccess) vt::fail("cudaGraphConditionalHandleCreate: %s", vt::err_text(made));
    void* set_args[] = {&value, &h};
    cudaGraphNode_t a = kernel_node(g, nullptr, 0, reinterpret_cast<void*>(set_if_odd), set_args);
    cudaGraph_t* body = conditional(g, &a, 1, h, cudaGraphCondTypeIf, 1);
    int ten = 10;
    void* add_args[] = {&out, &ten};
    cudaGraphNode_t added = kernel_node(body[0], nullptr, 0, reinterpret_cast<void*>(add_to), add_args);
    kernel_node(body[0], &added, 1, reinterpret_cast<void*>(tick), nullptr);
    cudaGraphExec_t e;
    CUDA_OK(cudaGraphInstantiate(&e, g, 0));
    put(value, 3);
    launch(e, s);
    vt::check(get(out) == 10, "if: an odd value runs the body (%d)", get(out));
    put(value, 4);
    launch(e, s);
    int ticked = 0;
    CUDA_OK(cudaMemcpyFromSymbol(&ticked, ticks, sizeof ticked));
    vt::check(get(out) == 10 && ticked == 1, "if: an even value does not (%d, %d ticks)", get(out), ticked);
    CUDA_OK(cudaGraphExecDestroy(e));
    CUDA_OK(cudaGraphDestroy(g));
  }

  // 2. if/else: the second body runs when the value is even.
  {
    put(out, 0);
    cudaGraph_t g;
    CUDA_OK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h;
    CUDA_OK(cudaGraphConditionalHandleCreate(&h, g));
    void* set_args[] = {&value, &h};
    cudaGraphNode_t a = kernel_node(g, nullptr, 0, reinterpret_cast<void*>(set_if_odd), set_args);
    cudaGraph_t* bodies = conditional(g, &a, 1, h, cudaGraphCondTypeIf, 2);
    int one = 1, hundred = 100;
    void* then_args[] = {&out, &one};
    void* else_args[] = {&out, &hundred};
    kernel_node(bodies[0], nullptr, 0, reinterpret_cast<void*>(add_to), then_args);
    kernel_node(bodies[1], nullptr, 0, reinterpret_cast<void*>(add_to), else_args);
    cudaGraphExec_t e;
    CUDA_OK(cudaGraphInstantiate(&e, g, 0));
    put(value, 7);
    launch(e, s);
    put(value, 8);
    launch(e, s);
    launch(e, s);
    vt::check(get(out) == 201, "if/else: then once, else twice (%d)", get(out));
    CUDA_OK(cudaGraphExecDestroy(e));
    CUDA_OK(cudaGraphDestroy(g));
  }

  // 3. do-while, its body captured into the node's graph; the handle is
  // reset to 1 at each launch, so the body always runs once.
  {
    cudaGraph_t g;
    CUDA_OK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h;
    CUDA_OK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
    cudaGraph_t* body = conditional(g, nullptr, 0, h, cudaGraphCondTypeWhile, 1);
    cudaStream_t cap;
    CUDA_OK(cudaStreamCreate(&cap));
    CUDA_OK(cudaStreamBeginCaptureToGraph(cap, body[0], nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
    count_down<<<1, 1, 0, cap>>>(counter, turns, h);
    LAUNCH_OK();
    CUDA_OK(cudaStreamEndCapture(cap, nullptr));
    CUDA_OK(cudaStreamDestroy(cap));
    size_t nodes = 0;
    CUDA_OK(cudaGraphGetNodes(body[0], nullptr, &nodes));
    vt::check(nodes == 1, "capture into a conditional body: %zu node", nodes);
    cudaGraphExec_t e;
    CUDA_OK(cudaGraphInstantiate(&e, g, 0));
    put(counter, 10);
    put(turns, 0);
    launch(e, s);
    vt::check(get(turns) == 10 && get(counter) == 0, "do-while from 10: %d turns", get(turns));
    put(counter, 0);
    put(turns, 0);
    launch(e, s);
    vt::check(get(turns) == 1, "do-while: the default value runs the body once (%d)", get(turns));
    CUDA_OK(cudaGraphExecDestroy(e));
    CUDA_OK(cudaGraphDestroy(g));
  }

  // 4. while, built during a stream capture: A -> B [ C ] -> D.
  {
    cudaStream_t cap;
    CUDA_OK(cudaStreamCreate(&cap));
    CUDA_OK(cudaStreamBeginCapture(cap, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus status;
    cudaGraph_t g;
    const cudaGraphNode_t* deps = nullptr;
    size_t ndeps = 0;
    CUDA_OK(cudaStreamGetCaptureInfo(cap, &status, nullptr, &g, &deps, nullptr, &ndeps));
    cudaGraphConditionalHandle h;
    CUDA_OK(cudaGraphConditionalHandleCreate(&h, g));
    step_down<<<1, 1, 0, cap>>>(counter, turns, h);
    LAUNCH_OK();
    CUDA_OK(cudaStreamGetCaptureInfo(cap, &status, nullptr, &g, &deps, nullptr, &ndeps));
    vt::check(ndeps == 1, "the captured kernel is the capture's tail (%zu)", ndeps);
    cudaGraphNode_t loop;
    cudaGraph_t* body = conditional(g, deps, ndeps, h, cudaGraphCondTypeWhile, 1, &loop);
    CUDA_OK(cudaStreamUpdateCaptureDependencies(cap, &loop, nullptr, 1, cudaStreamSetCaptureDependencies));
    add_to<<<1, 1, 0, cap>>>(done, 1);
    LAUNCH_OK();
    cudaGraph_t captured;
    CUDA_OK(cudaStreamEndCapture(cap, &captured));
    vt::check(captured == g, "the capture's graph is the one its info named");
    CUDA_OK(cudaStreamBeginCaptureToGraph(cap, body[0], nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
    step_down<<<1, 1, 0, cap>>>(counter, turns, h);
    LAUNCH_OK();
    CUDA_OK(cudaStreamEndCapture(cap, nullptr));
    CUDA_OK(cudaStreamDestroy(cap));
    size_t edges = 0;
    CUDA_OK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &edges));
    vt::check(edges == 2, "A -> B -> D: %zu edges", edges);
    cudaGraphExec_t e;
    CUDA_OK(cudaGraphInstantiate(&e, g, 0));
    put(counter, 0);
    put(turns, 0);
    put(done, 0);
    launch(e, s);
    vt::check(get(turns) == 0 && get(done) == 1, "while from 0: no turn, then D (%d, %d)", get(turns), get(done));
    put(counter, 5);
    launch(e, s);
    vt::check(get(turns) == 5 && get(counter) == 0 && get(done) == 2, "while from 5: 5 steps, then D (%d, %d)",
              get(turns), get(done));
    CUDA_OK(cudaGraphExecDestroy(e));
    CUDA_OK(cudaGraphDestroy(g));
  }

  // 5. switch: body n adds 10^n; a value past the last body runs none.
  {
    put(out, 0);
    cudaGraph_t g;
    CUDA_OK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h;
    CUDA_OK(cudaGraphConditionalHandleCreate(&h, g));
    void* set_args[] = {&value, &h};
    cudaGraphNode_t a = kernel_node(g, nullptr, 0, reinterpret_cast<void*>(set_to), set_args);
    cudaGraph_t* bodies = conditional(g, &a, 1, h, cudaGraphCondTypeSwitch, 4);
    int add[4] = {1, 10, 100, 1000};
    void* args[4][2];
    for (int i = 0; i < 4; ++i) {
      args[i][0] = &out;
      args[i][1] = &add[i];
      kernel_node(bodies[i], nullptr, 0, reinterpret_cast<void*>(add_to), args[i]);
    }
    cudaGraphExec_t e;
    CUDA_OK(cudaGraphInstantiate(&e, g, 0));
    for (int v : {2, 0, 3, 3, 4, 9}) {
      put(value, v);
      launch(e, s);
    }
    vt::check(get(out) == 2101, "switch: bodies 2, 0, 3 and 3; none for 4 and 9 (%d)", get(out));
    CUDA_OK(cudaGraphExecDestroy(e));
    CUDA_OK(cudaGraphDestroy(g));
  }

  // 6. An if in a while's body, on a handle of the outer graph: every
  // turn counts down; odd counts also add 1.
  {
    put(out, 0);
    cudaGraph_t g;
    CUDA_OK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle loop_h, odd_h;
    CUDA_OK(cudaGraphConditionalHandleCreate(&loop_h, g, 1, cudaGraphCondAssignDefault));
    CUDA_OK(cudaGraphConditionalHandleCreate(&odd_h, g));
    cudaGraph_t* body = conditional(g, nullptr, 0, loop_h, cudaGraphCondTypeWhile, 1);
    void* down_args[] = {&counter, &turns, &loop_h};
    cudaGraphNode_t down = kernel_node(body[0], nullptr, 0, reinterpret_cast<void*>(count_down), down_args);
    void* odd_args[] = {&counter, &odd_h};
    cudaGraphNode_t test = kernel_node(body[0], &down, 1, reinterpret_cast<void*>(set_if_odd), odd_args);
    cudaGraph_t* then = conditional(body[0], &test, 1, odd_h, cudaGraphCondTypeIf, 1);
    int one = 1;
    void* add_args[] = {&out, &one};
    kernel_node(then[0], nullptr, 0, reinterpret_cast<void*>(add_to), add_args);
    cudaGraphExec_t e;
    CUDA_OK(cudaGraphInstantiate(&e, g, 0));
    put(counter, 6);
    put(turns, 0);
    launch(e, s);
    // Counts after each turn: 5 4 3 2 1 0; odd ones: 5, 3, 1.
    vt::check(get(turns) == 6 && get(out) == 3, "nested: 6 turns, 3 odd (%d, %d)", get(turns), get(out));
    CUDA_OK(cudaGraphExecDestroy(e));
    CUDA_OK(cudaGraphDestroy(g));
  }

  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFree(c.d));
  vt::pass();
}
