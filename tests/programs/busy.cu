// busy MICROSECONDS ITERATIONS [BATCH [HOLD_MIB]]: launches spin(MICROSECONDS
// * 1000) ITERATIONS times on the default stream, synchronizes, and prints the
// elapsed time. With BATCH it synchronizes after every BATCH launches too, as
// most student programs do (launch a few kernels, wait, launch again); BATCH
// 0 never. With HOLD_MIB it holds that much device memory while it runs
// (vgpu-smi's per-process memory).
// On a GPU spin busy-waits on %globaltimer; under the sim backend the plug-in
// reports the same duration as the kernel's modeled time, so the scheduler
// tests get kernels of known length. It prints "launched" once every kernel
// is queued, then, before PASS:
//   elapsed_us <wall-clock microseconds, launches through synchronize>
//   gpu_us <microseconds between events recorded around the launches>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "common.h"

__global__ void spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

static bool parse(const char* s, unsigned long long* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-') return false;
  *out = v;
  return true;
}

int main(int argc, char** argv) {
  vt::set_name("busy");
  unsigned long long us = 0, iterations = 0, batch = 0, hold_mib = 0;
  if (argc < 3 || argc > 5 || !parse(argv[1], &us) || !parse(argv[2], &iterations) ||
      (argc >= 4 && !parse(argv[3], &batch)) || (argc == 5 && !parse(argv[4], &hold_mib)) ||
      us > 3600ull * 1000 * 1000 || hold_mib > 1024 * 1024)
    vt::fail("usage: busy MICROSECONDS ITERATIONS [BATCH [HOLD_MIB]]");
  void* held = nullptr;
  if (hold_mib != 0) CUDA_OK(cudaMalloc(&held, hold_mib << 20));

  cudaEvent_t before, after;
  CUDA_OK(cudaEventCreate(&before));
  CUDA_OK(cudaEventCreate(&after));
  auto start = std::chrono::steady_clock::now();
  CUDA_OK(cudaEventRecord(before, 0));
  for (unsigned long long i = 0; i < iterations; ++i) {
    spin<<<1, 1>>>(us * 1000);
    LAUNCH_OK();
    if (batch != 0 && (i + 1) % batch == 0) CUDA_OK(cudaStreamSynchronize(0));
  }
  CUDA_OK(cudaEventRecord(after, 0));
  std::printf("launched\n");  // for a test that kills it while its kernels run
  std::fflush(stdout);
  CUDA_OK(cudaDeviceSynchronize());
  auto wall_us = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, before, after));
  std::printf("busy: %llu launches of %llu us\n", iterations, us);
  std::printf("elapsed_us %lld\n", static_cast<long long>(wall_us));
  std::printf("gpu_us %.0f\n", ms * 1000.0);
  CUDA_OK(cudaEventDestroy(before));
  CUDA_OK(cudaEventDestroy(after));
  if (held) CUDA_OK(cudaFree(held));
  vt::pass();
}
