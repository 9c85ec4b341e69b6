// dynamic_parallelism: kernels that launch kernels (CUDA Dynamic Parallelism), built with
// -rdc=true and cudadevrt as course material builds them (tests/programs/CMakeLists.txt), each
// checked against the CPU:
//
//   1. every block's thread 0 launches a child grid over the block's slice of an array;
//   2. a recursive launch tree (each level's blocks launch the next, as Professional CUDA C's
//      nestedHelloWorld does), with device printf from the children;
//   3. a recursive sum that launches the second half of each range from the device, down to
//      one block each (a tail-recursive reduction: CUDA 12 has no device-side synchronize);
//   4. a child on a stream the parent made, and a launch the device runtime refuses (2048
//      threads a block) reported by the device's cudaGetLastError.
#include <vector>

#include "common.h"

__global__ void fill_slice(int* out, int base, int value) { out[base + threadIdx.x] = value + threadIdx.x; }

__global__ void launch_per_block(int* out) {
  if (threadIdx.x == 0) fill_slice<<<1, 32>>>(out, blockIdx.x * 32, 1000 * blockIdx.x);
}

__global__ void tree(int depth, int* count) {
  atomicAdd(count, 1);
  if (threadIdx.x == 0 && blockIdx.x == 0) printf("tree level %d: %d blocks\n", depth, gridDim.x);
  if (depth > 0 && threadIdx.x == 0) tree<<<2, 2>>>(depth - 1, count);
}

// Adds in[begin, end) into *sum: one block of 256 threads sums a range of at most 256; a
// longer range is split, its second half launched as a grid of its own.
__global__ void recursive_sum(const int* in, int begin, int end, unsigned long long* sum) {
  int length = end - begin;
  while (length > 256) {
    const int half = length / 2;
    if (threadIdx.x == 0) recursive_sum<<<1, 256>>>(in, begin + half, begin + length, sum);
    length = half;
  }
  __shared__ unsigned long long partial;
  if (threadIdx.x == 0) partial = 0;
  __syncthreads();
  if (threadIdx.x < length) atomicAdd(&partial, static_cast<unsigned long long>(in[begin + threadIdx.x]));
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(sum, partial);
}

__global__ void streams_and_errors(int* out, int* errors) {
  fill_slice<<<1, 2048>>>(out, 0, 0);  // too many threads a block: refused
  errors[0] = cudaGetLastError();
  errors[1] = cudaGetLastError();  // read once, then cleared
  cudaStream_t s;
  errors[2] = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  fill_slice<<<1, 4, 0, s>>>(out, 0, 7);
  errors[3] = cudaGetLastError();
  errors[4] = cudaStreamDestroy(s);
}

void per_block() {
  constexpr int kBlocks = 64;
  int* d = nullptr;
  CUDA_OK(cudaMalloc(&d, kBlocks * 32 * sizeof(int)));
  CUDA_OK(cudaMemset(d, 0xff, kBlocks * 32 * sizeof(int)));
  launch_per_block<<<kBlocks, 64>>>(d);
  LAUNCH_OK();
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<int> h(kBlocks * 32);
  CUDA_OK(cudaMemcpy(h.data(), d, h.size() * sizeof(int), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int b = 0; b < kBlocks; ++b)
    for (int i = 0; i < 32; ++i) wrong += h[b * 32 + i] != 1000 * b + i;
  vt::check(wrong == 0, "%d child grids, one per block, filled their slices (%d wrong)", kBlocks, wrong);
  CUDA_OK(cudaFree(d));
}

void launch_tree() {
  int* count = nullptr;
  CUDA_OK(cudaMalloc(&count, sizeof(int)));
  CUDA_OK(cudaMemset(count, 0, sizeof(int)));
  tree<<<1, 2>>>(3, count);
  LAUNCH_OK();
  CUDA_OK(cudaDeviceSynchronize());
  int h = 0;
  CUDA_OK(cudaMemcpy(&h, count, sizeof h, cudaMemcpyDeviceToHost));
  vt::check(h == 2 + 4 + 8 + 16, "a launch tree four levels deep ran every thread once (%d of 30)", h);
  CUDA_OK(cudaFree(count));
}

void sum() {
  constexpr int kN = 5000;
  std::vector<int> h(kN);
  unsigned long long want = 0;
  for (int i = 0; i < kN; ++i) want += h[i] = (i * 37) % 101;
  int* in = nullptr;
  unsigned long long* total = nullptr;
  CUDA_OK(cudaMalloc(&in, kN * sizeof(int)));
  CUDA_OK(cudaMalloc(&total, sizeof *total));
  CUDA_OK(cudaMemcpy(in, h.data(), kN * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(total, 0, sizeof *total));
  recursive_sum<<<1, 256>>>(in, 0, kN, total);
  LAUNCH_OK();
  CUDA_OK(cudaDeviceSynchronize());
  unsigned long long got = 0;
  CUDA_OK(cudaMemcpy(&got, total, sizeof got, cudaMemcpyDeviceToHost));
  vt::check(got == want, "a recursive sum of %d numbers launched from the device: %llu (want %llu)", kN, got, want);
  CUDA_OK(cudaFree(in));
  CUDA_OK(cudaFree(total));
}

void device_errors() {
  int* out = nullptr;
  int* errors = nullptr;
  CUDA_OK(cudaMalloc(&out, 8 * sizeof(int)));
  CUDA_OK(cudaMalloc(&errors, 5 * sizeof(int)));
  CUDA_OK(cudaMemset(out, 0xff, 8 * sizeof(int)));
  streams_and_errors<<<1, 1>>>(out, errors);
  LAUNCH_OK();
  CUDA_OK(cudaDeviceSynchronize());
  int h_out[8], h_err[5];
  CUDA_OK(cudaMemcpy(h_out, out, sizeof h_out, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(h_err, errors, sizeof h_err, cudaMemcpyDeviceToHost));
  vt::check(h_err[0] == cudaErrorInvalidConfiguration && h_err[1] == cudaSuccess,
            "a 2048-thread child launch is refused on the device: %d, then %d", h_err[0], h_err[1]);
  vt::check(h_err[2] == cudaSuccess && h_err[3] == cudaSuccess && h_err[4] == cudaSuccess,
            "a device-side stream made, launched on, destroyed: %d %d %d", h_err[2], h_err[3], h_err[4]);
  vt::check(h_out[0] == 7 && h_out[3] == 10 && h_out[4] == -1,
            "the child on that stream ran, the refused one did not: %d %d %d", h_out[0], h_out[3], h_out[4]);
  CUDA_OK(cudaFree(out));
  CUDA_OK(cudaFree(errors));
}

int main() {
  vt::set_name("dynamic_parallelism");
  per_block();
  launch_tree();
  sum();
  device_errors();
  vt::pass();
}
