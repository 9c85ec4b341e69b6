// threads: a program whose threads share the GPU, as a CUDA program's
// threads share one device (and, under vgpu, one connection to the host).
//
// 1. Four threads, each with its own stream and buffers, run rounds of
//    allocate / copy in / vector_add / copy out / check / free at the same
//    time: every thread gets its own results back, every round.
// 2. One thread waits in cudaStreamSynchronize for a 3-second kernel while
//    another launches 200 kernels on its own stream: the waiting thread must not hold the others up. The other thread checks
//    that the long kernel is still running once it is done (cudaStreamQuery
//    reports cudaErrorNotReady); had it been blocked until the synchronize
//    returned, the kernel would be finished.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common.h"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

namespace {

constexpr int kThreads = 4;
constexpr int kRounds = 25;
constexpr int kElements = 4096;
constexpr unsigned long long kLongKernelNs = 3'000'000'000ull;
constexpr int kLaunchesMeanwhile = 200;

// One thread's rounds; returns an error text, or nullptr.
const char* rounds(int thread) {
  static thread_local char why[256];
  cudaStream_t s;
  if (cudaStreamCreate(&s) != cudaSuccess) return "cudaStreamCreate failed";
  std::vector<float> a(kElements), b(kElements), c(kElements);
  for (int r = 0; r < kRounds; ++r) {
    for (int i = 0; i < kElements; ++i) {
      a[i] = static_cast<float>(thread * 100000 + r * 1000 + i % 1000);
      b[i] = static_cast<float>(i % 7);
    }
    float *da, *db, *dc;
    const size_t bytes = kElements * sizeof(float);
    if (cudaMalloc(&da, bytes) != cudaSuccess || cudaMalloc(&db, bytes) != cudaSuccess ||
        cudaMalloc(&dc, bytes) != cudaSuccess)
      return "cudaMalloc failed";
    if (cudaMemcpyAsync(da, a.data(), bytes, cudaMemcpyHostToDevice, s) != cudaSuccess ||
        cudaMemcpyAsync(db, b.data(), bytes, cudaMemcpyHostToDevice, s) != cudaSuccess)
      return "copy in failed";
    vector_add<<<(kElements + 255) / 256, 256, 0, s>>>(da, db, dc, kElements);
    if (cudaGetLastError() != cudaSuccess) return "launch failed";
    if (cudaMemcpyAsync(c.data(), dc, bytes, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess)
      return "copy out failed";
    for (int i = 0; i < kElements; ++i) {
      if (c[i] != a[i] + b[i]) {
        std::snprintf(why, sizeof why, "thread %d round %d: c[%d] = %g, want %g", thread, r, i,
                      c[i], a[i] + b[i]);
        return why;
      }
    }
    if (cudaFree(da) != cudaSuccess || cudaFree(db) != cudaSuccess || cudaFree(dc) != cudaSuccess)
      return "cudaFree failed";
  }
  return cudaStreamDestroy(s) == cudaSuccess ? nullptr : "cudaStreamDestroy failed";
}

}  // namespace

int main() {
  vt::set_name("threads");
  CUDA_OK(cudaFree(nullptr));  // the context, before the threads race to make it

  // 1. Threads at once, each its own results.
  {
    std::vector<std::thread> threads;
    const char* errors[kThreads] = {};
    for (int t = 0; t < kThreads; ++t) threads.emplace_back([&, t] { errors[t] = rounds(t); });
    for (auto& t : threads) t.join();
    for (int t = 0; t < kThreads; ++t) {
      if (errors[t]) vt::fail("%s", errors[t]);
    }
    vt::check(true, "%d threads x %d rounds of copy in / vector_add / copy out, each its own results",
              kThreads, kRounds);
  }

  // 2. A thread waiting on its stream does not hold the others up.
  cudaStream_t waited, other;
  CUDA_OK(cudaStreamCreateWithFlags(&waited, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  std::atomic<bool> waiting{false};
  cudaError_t waited_result = cudaErrorUnknown;
  std::thread waiter([&] {
    spin<<<1, 1, 0, waited>>>(kLongKernelNs);
    waiting = true;
    waited_result = cudaStreamSynchronize(waited);
  });
  while (!waiting) std::this_thread::yield();
  // Let the synchronize reach the host first, so that a library that holds
  // one lock across it blocks what follows. Without this pause the checks
  // below hold all the same; they only test less.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (int i = 0; i < kLaunchesMeanwhile; ++i) {
    spin<<<1, 1, 0, other>>>(0);
    LAUNCH_OK();
  }
  const cudaError_t still = cudaStreamQuery(waited);
  vt::check(still == cudaErrorNotReady,
            "%d launches while another thread synchronizes: the long kernel "
            "is still running afterwards (cudaStreamQuery: %s)",
            kLaunchesMeanwhile, vt::err_text(still));
  waiter.join();
  vt::check(waited_result == cudaSuccess, "the waiting thread's synchronize returns %s",
            vt::err_text(waited_result));
  CUDA_OK(cudaStreamSynchronize(other));
  vt::check(cudaStreamQuery(waited) == cudaSuccess, "the long kernel is done after the synchronize");
  CUDA_OK(cudaStreamDestroy(waited));
  CUDA_OK(cudaStreamDestroy(other));
  vt::pass();
}
