// async_copies: Ampere's asynchronous copies as CUDA's C++ library offers them, built for
// Hopper (sm_90 and its PTX) as a lab with H100s builds:
//   1. cuda::memcpy_async of a block's tile completing on a cuda::barrier, then rounds of
//      arrive_and_wait with no __syncthreads (mbarrier arrive and try_wait);
//   2. a float4 a thread copied with cuda::memcpy_async on a cuda::barrier (for sm_90 a bulk
//      copy that completes on the barrier's transaction count);
//   3. a two-stage cuda::pipeline: producer_acquire/commit, consumer_wait/release.
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/pipeline>

#include <vector>

#include "common.h"

namespace cg = cooperative_groups;

constexpr int kThreads = 256;

#pragma nv_diag_suppress static_var_with_dynamic_init
__global__ void barrier_rounds(const int* in, int* out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  __shared__ int tile[kThreads];
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  cuda::memcpy_async(block, tile, in + blockIdx.x * kThreads, sizeof(int) * kThreads, bar);
  bar.arrive_and_wait();
  int v = tile[kThreads - 1 - threadIdx.x];
  for (int round = 0; round < 3; ++round) {
    bar.arrive_and_wait();  // every thread has read the tile
    tile[threadIdx.x] = v + 1;
    bar.arrive_and_wait();  // every thread has written it
    v = tile[(threadIdx.x + 1) % kThreads];
  }
  out[blockIdx.x * kThreads + threadIdx.x] = v;
}

// Each thread copies one float4 with cuda::memcpy_async on the block's barrier, as NVIDIA's
// globalToShmemAsyncCopy does: for sm_90, 16-byte aligned copies are bulk copies (TMA's)
// completing on the barrier's transaction count.
__global__ void float4_tiles(const float4* in, float4* out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  __shared__ float4 tile[kThreads];
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  cuda::memcpy_async(&tile[threadIdx.x], &in[blockIdx.x * kThreads + threadIdx.x], sizeof(float4), bar);
  bar.arrive_and_wait();
  const float4 v = tile[kThreads - 1 - threadIdx.x];
  out[blockIdx.x * kThreads + threadIdx.x] = make_float4(v.x * 2, v.y * 2, v.z * 2, v.w * 2);
}

__global__ void pipelined_sum(const int* in, int stages, int* out) {
  constexpr int kDepth = 2;
  __shared__ int buffer[kDepth][kThreads];
  auto pipe = cuda::make_pipeline();
  int fetched = 0, sum = 0;
  for (; fetched < kDepth && fetched < stages; ++fetched) {
    pipe.producer_acquire();
    cuda::memcpy_async(&buffer[fetched % kDepth][threadIdx.x], &in[fetched * kThreads + threadIdx.x], sizeof(int), pipe);
    pipe.producer_commit();
  }
  for (int s = 0; s < stages; ++s) {
    pipe.consumer_wait();
    sum += buffer[s % kDepth][threadIdx.x];
    pipe.consumer_release();
    if (fetched < stages) {
      pipe.producer_acquire();
      cuda::memcpy_async(&buffer[fetched % kDepth][threadIdx.x], &in[fetched * kThreads + threadIdx.x], sizeof(int), pipe);
      pipe.producer_commit();
      ++fetched;
    }
  }
  out[threadIdx.x] = sum;
}

int main() {
  vt::set_name("async_copies");
  constexpr int blocks = 8, n = blocks * kThreads;
  std::vector<int> host(n), got(n);
  for (int i = 0; i < n; ++i) host[i] = i * 7 % 1001;
  int *in = nullptr, *out = nullptr;
  CUDA_OK(cudaMalloc(&in, n * sizeof(int)));
  CUDA_OK(cudaMalloc(&out, n * sizeof(int)));
  CUDA_OK(cudaMemcpy(in, host.data(), n * sizeof(int), cudaMemcpyHostToDevice));

  barrier_rounds<<<blocks, kThreads>>>(in, out);
  LAUNCH_OK();
  CUDA_OK(cudaMemcpy(got.data(), out, n * sizeof(int), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < kThreads; ++t)
      wrong += got[b * kThreads + t] != host[b * kThreads + kThreads - 1 - (t + 3) % kThreads] + 3;
  vt::check(wrong == 0, "cuda::barrier: a tile copied with memcpy_async, then three rounds of arrive_and_wait (%d wrong)", wrong);

  std::vector<float4> quads(n), got_quads(n);
  for (int i = 0; i < n; ++i) quads[i] = make_float4(i, i + 0.25f, i + 0.5f, i + 0.75f);
  float4 *qin = nullptr, *qout = nullptr;
  CUDA_OK(cudaMalloc(&qin, n * sizeof(float4)));
  CUDA_OK(cudaMalloc(&qout, n * sizeof(float4)));
  CUDA_OK(cudaMemcpy(qin, quads.data(), n * sizeof(float4), cudaMemcpyHostToDevice));
  float4_tiles<<<blocks, kThreads>>>(qin, qout);
  LAUNCH_OK();
  CUDA_OK(cudaMemcpy(got_quads.data(), qout, n * sizeof(float4), cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < kThreads; ++t) {
      const float4 want = quads[b * kThreads + kThreads - 1 - t], g = got_quads[b * kThreads + t];
      wrong += g.x != want.x * 2 || g.y != want.y * 2 || g.z != want.z * 2 || g.w != want.w * 2;
    }
  vt::check(wrong == 0, "cuda::memcpy_async of a float4 a thread on a cuda::barrier (%d wrong)", wrong);
  CUDA_OK(cudaFree(qin));
  CUDA_OK(cudaFree(qout));

  pipelined_sum<<<1, kThreads>>>(in, blocks, out);
  LAUNCH_OK();
  CUDA_OK(cudaMemcpy(got.data(), out, kThreads * sizeof(int), cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int t = 0; t < kThreads; ++t) {
    int want = 0;
    for (int s = 0; s < blocks; ++s) want += host[s * kThreads + t];
    wrong += got[t] != want;
  }
  vt::check(wrong == 0, "cuda::pipeline: %d stages through two buffers sum right (%d wrong)", blocks, wrong);

  CUDA_OK(cudaFree(in));
  CUDA_OK(cudaFree(out));
  vt::pass();
}
