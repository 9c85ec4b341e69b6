// cooperative: a grid-wide reduction with cooperative groups, launched
// cooperatively as NVIDIA's samples do (reductionMultiBlockCG):
//   1. the device says it can (cudaDevAttrCooperativeLaunch);
//   2. the largest grid the occupancy calculator allows runs, and grid.sync()
//      separates its two phases: the sum is right;
//   3. one block more is refused with cudaErrorCooperativeLaunchTooLarge and
//      runs nothing;
//   4. cudaLaunchKernelEx with cudaLaunchAttributeCooperative runs too.
#include <cooperative_groups.h>

#include <vector>

#include "common.h"

namespace cg = cooperative_groups;

__global__ void grid_sum(const int* in, int n, int* partial, int* out) {
  cg::grid_group grid = cg::this_grid();
  // Phase 1: thread 0 of each block sums the block's strided share.
  if (threadIdx.x == 0) {
    int s = 0;
    for (int i = blockIdx.x; i < n; i += gridDim.x) s += in[i];
    partial[blockIdx.x] = s;
  }
  grid.sync();
  // Phase 2: one thread of the whole grid adds the blocks' sums.
  if (grid.thread_rank() == 0) {
    int s = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) s += partial[b];
    *out = s;
  }
}

int main() {
  vt::set_name("cooperative");
  int can = 0, sms = 0;
  CUDA_OK(cudaDeviceGetAttribute(&can, cudaDevAttrCooperativeLaunch, 0));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  vt::check(can == 1, "the device supports cooperative launch");

  constexpr int kThreads = 128;
  int per_sm = 0;
  CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_sum, kThreads, 0));
  const int blocks = per_sm * sms;
  vt::check(blocks > 0, "occupancy: %d blocks per multiprocessor, %d multiprocessors", per_sm, sms);

  constexpr int kN = 100000;
  std::vector<int> host(kN);
  long long want = 0;
  for (int i = 0; i < kN; ++i) want += host[i] = i % 7;
  int *in = nullptr, *partial = nullptr, *out = nullptr;
  CUDA_OK(cudaMalloc(&in, kN * sizeof(int)));
  CUDA_OK(cudaMalloc(&partial, (blocks + 1) * sizeof(int)));
  CUDA_OK(cudaMalloc(&out, sizeof(int)));
  CUDA_OK(cudaMemcpy(in, host.data(), kN * sizeof(int), cudaMemcpyHostToDevice));

  int n = kN;
  void* args[] = {&in, &n, &partial, &out};
  CUDA_OK(cudaMemset(out, 0, sizeof(int)));
  CUDA_OK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(grid_sum), dim3(blocks), dim3(kThreads), args));
  int got = 0;
  CUDA_OK(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
  vt::check(got == want, "a cooperative grid of %d blocks sums to %d (want %lld)", blocks, got, want);

  CUDA_OK(cudaMemset(out, 0, sizeof(int)));
  const cudaError_t e =
      cudaLaunchCooperativeKernel(reinterpret_cast<void*>(grid_sum), dim3(blocks + 1), dim3(kThreads), args);
  vt::check(e == cudaErrorCooperativeLaunchTooLarge, "one block more is refused (%s)", vt::err_text(e));
  (void)cudaGetLastError();
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
  vt::check(got == 0, "and nothing ran");

  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks / 2 > 0 ? blocks / 2 : 1);
  config.blockDim = dim3(kThreads);
  config.attrs = &attr;
  config.numAttrs = 1;
  CUDA_OK(cudaLaunchKernelEx(&config, grid_sum, static_cast<const int*>(in), n, partial, out));
  CUDA_OK(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
  vt::check(got == want, "cudaLaunchKernelEx with the cooperative attribute sums to %d", got);

  for (void* p : {static_cast<void*>(in), static_cast<void*>(partial), static_cast<void*>(out)}) CUDA_OK(cudaFree(p));
  vt::pass();
}
