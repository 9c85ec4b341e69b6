// thrust_algorithms: what a course does with Thrust (and so with CUB's device
// algorithms underneath): a scan over many tiles (CUB's decoupled look-back,
// whose blocks wait on earlier ones), a reduction, a radix sort and a
// transform, each checked against the CPU. Also CUB's block and warp scans
// directly: their warp transposes exchange values through shared memory
// with only __syncwarp between. No sim plug-in implements these kernels: on
// the sim backend they run from their PTX (the interpreter).
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/transform.h>

#include <algorithm>
#include <cub/cub.cuh>
#include <vector>

#include "common.h"

constexpr int kBlock = 128;

__global__ void block_and_warp_scans(const int* in, int* block_out, int* warp_out) {
  using BlockScan = cub::BlockScan<int, kBlock, cub::BLOCK_SCAN_WARP_SCANS>;
  using WarpScan = cub::WarpScan<int>;
  __shared__ typename BlockScan::TempStorage block_tmp;
  __shared__ typename WarpScan::TempStorage warp_tmp[kBlock / 32];
  const int v = in[threadIdx.x];
  int r;
  BlockScan(block_tmp).ExclusiveSum(v, r);
  block_out[threadIdx.x] = r;
  WarpScan(warp_tmp[threadIdx.x / 32]).InclusiveSum(v, r);
  warp_out[threadIdx.x] = r;
}

struct Square {
  __host__ __device__ long long operator()(int x) const { return static_cast<long long>(x) * x; }
};

void check_thrust() {
  const int n = 100000;  // several of CUB's tiles for each algorithm
  thrust::host_vector<int> h(n);
  for (int i = 0; i < n; ++i) h[i] = (i * 7919) % 1000 - 300;
  thrust::device_vector<int> d = h;

  thrust::device_vector<int> scanned(n);
  thrust::inclusive_scan(d.begin(), d.end(), scanned.begin());
  thrust::host_vector<int> got = scanned;
  int running = 0, first_bad = -1;
  for (int i = 0; i < n && first_bad < 0; ++i) {
    running += h[i];
    if (got[i] != running) first_bad = i;
  }
  vt::check(first_bad < 0, "thrust::inclusive_scan over %d elements (first wrong at %d)", n, first_bad);

  long long want_sum = 0, want_squares = 0;
  for (int x : h) {
    want_sum += x;
    want_squares += static_cast<long long>(x) * x;
  }
  const long long sum = thrust::reduce(d.begin(), d.end(), 0LL);
  vt::check(sum == want_sum, "thrust::reduce: %lld (want %lld)", sum, want_sum);

  thrust::device_vector<long long> squares(n);
  thrust::transform(d.begin(), d.end(), squares.begin(), Square());
  const long long sum_squares = thrust::reduce(squares.begin(), squares.end(), 0LL);
  vt::check(sum_squares == want_squares, "thrust::transform then reduce: %lld (want %lld)", sum_squares,
            want_squares);

  thrust::sort(d.begin(), d.end());
  std::vector<int> want(h.begin(), h.end());
  std::sort(want.begin(), want.end());
  thrust::host_vector<int> sorted = d;
  vt::check(std::equal(want.begin(), want.end(), sorted.begin()), "thrust::sort (radix sort) of %d ints", n);
}

void check_cub_scans() {
  std::vector<int> h(kBlock);
  for (int i = 0; i < kBlock; ++i) h[i] = i % 5 + 1;
  int *in, *block_out, *warp_out;
  CUDA_OK(cudaMalloc(&in, kBlock * sizeof(int)));
  CUDA_OK(cudaMalloc(&block_out, kBlock * sizeof(int)));
  CUDA_OK(cudaMalloc(&warp_out, kBlock * sizeof(int)));
  CUDA_OK(cudaMemcpy(in, h.data(), kBlock * sizeof(int), cudaMemcpyHostToDevice));
  block_and_warp_scans<<<1, kBlock>>>(in, block_out, warp_out);
  LAUNCH_OK();
  std::vector<int> b(kBlock), w(kBlock);
  CUDA_OK(cudaMemcpy(b.data(), block_out, kBlock * sizeof(int), cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(w.data(), warp_out, kBlock * sizeof(int), cudaMemcpyDeviceToHost));
  bool block_ok = true, warp_ok = true;
  int exclusive = 0, in_warp = 0;
  for (int i = 0; i < kBlock; ++i) {
    block_ok = block_ok && b[i] == exclusive;
    exclusive += h[i];
    in_warp = (i % 32 == 0 ? 0 : in_warp) + h[i];
    warp_ok = warp_ok && w[i] == in_warp;
  }
  vt::check(block_ok, "cub::BlockScan exclusive sum over %d threads", kBlock);
  vt::check(warp_ok, "cub::WarpScan inclusive sum in each warp");
  CUDA_OK(cudaFree(in));
  CUDA_OK(cudaFree(block_out));
  CUDA_OK(cudaFree(warp_out));
}

int main() {
  vt::set_name("thrust_algorithms");
  check_cub_scans();
  check_thrust();
  CUDA_OK(cudaDeviceSynchronize());
  vt::pass();
}
