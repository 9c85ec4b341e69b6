// Dynamic parallelism (compiled with -rdc=true): kernels that launch kernels from the device.
#include <cstdio>

extern "C" __global__ void cdp_child(int* out, int base, int value) {
  out[base + threadIdx.x] = value + threadIdx.x;
}

// Each block's thread 0 launches one child grid over the block's slice of `out`.
extern "C" __global__ void cdp_parent(int* out) {
  if (threadIdx.x == 0) cdp_child<<<1, 32>>>(out, blockIdx.x * 32, 1000 * blockIdx.x);
}

// Every thread counts itself and the lowest `depth` it saw, then thread 0 of each block launches
// the next level (`width` blocks of two threads) with depth - 1, down to 0.
extern "C" __global__ void cdp_tree(int depth, int width, int* count, int* lowest) {
  atomicAdd(count, 1);
  atomicMin(lowest, depth);
  if (depth > 0 && threadIdx.x == 0) cdp_tree<<<width, 2>>>(depth - 1, width, count, lowest);
}

// A child launch the device runtime refuses (2048 threads a block) reports its error to the
// parent; one on a stream of the parent's own runs.
extern "C" __global__ void cdp_errors(int* out, int* errors) {
  cdp_child<<<1, 2048>>>(out, 0, 0);
  errors[0] = cudaGetLastError();
  errors[1] = cudaGetLastError();
  cudaStream_t s;
  errors[2] = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cdp_child<<<1, 4, 0, s>>>(out, 0, 7);
  errors[3] = cudaGetLastError();
  errors[4] = cudaStreamDestroy(s);
}

// A child that traps: the host sees the launch of the parent fail.
extern "C" __global__ void cdp_trap_child() { __trap(); }
extern "C" __global__ void cdp_trap_parent() { cdp_trap_child<<<1, 1>>>(); }

// Every thread launches a one-thread grid: more launches than one host launch may hold pending.
extern "C" __global__ void cdp_count(int* ran) { atomicAdd(ran, 1); }
extern "C" __global__ void cdp_flood(int* ran, int* refused, int* other) {
  cdp_count<<<1, 1>>>(ran);
  const cudaError_t e = cudaGetLastError();
  if (e == cudaErrorLaunchPendingCountExceeded) atomicAdd(refused, 1);
  else if (e != cudaSuccess) atomicAdd(other, 1);
}

// Device-side copies and memsets keep their place among the launches: the copy reads what the
// child launched before it wrote.
extern "C" __global__ void cdp_copies(int* a, int* b, int* c, int* errors) {
  cdp_child<<<1, 8>>>(a, 0, 100);
  errors[0] = cudaMemcpyAsync(b, a, 8 * sizeof(int), cudaMemcpyDeviceToDevice, 0);
  errors[1] = cudaMemsetAsync(c, 0x7f, 8 * sizeof(int), 0);
  errors[2] = cudaMemcpyAsync(nullptr, a, 4, cudaMemcpyDeviceToDevice, 0);
}
