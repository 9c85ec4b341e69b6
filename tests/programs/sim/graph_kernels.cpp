// CPU implementations of graph_conditionals.cu's and graph_api.cu's kernels,
// one thread each.
// cudaGraphSetConditional becomes vgpu_sim_graph_set_conditional.
#include "kernel_support.h"

using namespace vgpu_test_kernels;

// __global__ void set_if_odd(const int* value, cudaGraphConditionalHandle h)
VGPU_SIM_KERNEL(_Z10set_if_oddPKiy) {
  const int* value;
  unsigned long long h;
  if (!read_params(launch, value, h)) return kBadParams;
  vgpu_sim_graph_set_conditional(h, *value & 1);
  return 0;
}

// __global__ void set_to(const int* value, cudaGraphConditionalHandle h)
VGPU_SIM_KERNEL(_Z6set_toPKiy) {
  const int* value;
  unsigned long long h;
  if (!read_params(launch, value, h)) return kBadParams;
  vgpu_sim_graph_set_conditional(h, static_cast<unsigned>(*value));
  return 0;
}

// __global__ void add_to(int* out, int k)
VGPU_SIM_KERNEL(_Z6add_toPii) {
  int* out;
  int k;
  if (!read_params(launch, out, k)) return kBadParams;
  *out += k;
  return 0;
}

// __device__ int ticks; __global__ void tick()
VGPU_SIM_KERNEL(_Z4tickv) {
  int* ticks = symbol<int>(launch, "ticks");
  if (!ticks) return kUnknownSymbol;
  ++*ticks;
  return 0;
}

// __global__ void count_down(int* counter, int* turns, cudaGraphConditionalHandle h)
VGPU_SIM_KERNEL(_Z10count_downPiS_y) {
  int* counter;
  int* turns;
  unsigned long long h;
  if (!read_params(launch, counter, turns, h)) return kBadParams;
  ++*turns;
  if (--*counter <= 0) vgpu_sim_graph_set_conditional(h, 0);
  return 0;
}

// __global__ void step_down(int* counter, int* turns, cudaGraphConditionalHandle h)
VGPU_SIM_KERNEL(_Z9step_downPiS_y) {
  int* counter;
  int* turns;
  unsigned long long h;
  if (!read_params(launch, counter, turns, h)) return kBadParams;
  if (*counter > 0) {
    --*counter;
    ++*turns;
  }
  vgpu_sim_graph_set_conditional(h, static_cast<unsigned>(*counter));
  return 0;
}
