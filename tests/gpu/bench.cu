// vgpu's GPU benchmark and GPU checks: one CUDA program, run natively (the
// real runtime) and forwarded through vgpu (vgpu-run, as a simulated VM), by
// tests/gpu/run.sh, which prints the two side by side.
//
//   bench all                 latency, launches, bandwidth, compute
//   bench latency [N]         launch + synchronize of an empty kernel, N times
//   bench launches [N]        N launches of an empty kernel, then one synchronize
//   bench bandwidth           cudaMemcpy H2D and D2H, pageable and pinned, 4 KiB .. 256 MiB
//   bench compute [REPS]      a compute-bound kernel (FMA chains), REPS runs
//   bench meminfo             what cudaMemGetInfo says
//   bench calibrate MS        FMA iterations for a kernel of about MS milliseconds
//   bench fair SECONDS        ~2 ms kernels back to back for SECONDS (the fairness run)
//   bench fault               an illegal address: the error, then a reset and working again
//   bench hang                a kernel that never ends: the watchdog's error, then a reset
//
// Figures are printed as "RESULT <metric> <value>"; the last line is
// "PASS bench" or "FAIL bench: <why>". Built with nvcc -cudart shared.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& why) {
  std::printf("FAIL bench: %s\n", why.c_str());
  std::exit(1);
}

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorName(e));
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void result(const std::string& metric, double value) {
  std::printf("RESULT %s %.6g\n", metric.c_str(), value);
  std::fflush(stdout);
}

__global__ void empty_kernel() {}

// Independent FMA chains per thread: compute-bound, no memory traffic.
__global__ void fma_kernel(float* out, int iterations) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 0.9999f, d = blockIdx.x * 1e-4f;
  for (int i = 0; i < iterations; ++i) {
    a = fmaf(a, b, c);
    d = fmaf(d, c, b);
    b = fmaf(b, 0.99991f, 1e-7f);
    c = fmaf(c, 1.00002f, -1e-7f);
  }
  if (a + b + c + d == 12345.678f) out[0] = a;  // never true; keeps the work
}

// The kernels of the checks carry the words tests/unit/cuda_backend's fake
// driver acts on (fill, fault, hang), so the checks also run without a GPU.
__global__ void fill(int* p, int value, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = value;
}

__global__ void fault_write(int* p) { p[threadIdx.x] = 1; }

__global__ void hang_forever(volatile int* flag) {
  while (*flag == 0) {
  }
}

int sm_count() {
  int sms = 0;
  ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
  return sms > 0 ? sms : 1;
}

void latency(int n) {
  for (int i = 0; i < 50; ++i) empty_kernel<<<1, 1>>>();
  ok(cudaDeviceSynchronize(), "warm-up");
  std::vector<double> us(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto t = Clock::now();
    empty_kernel<<<1, 1>>>();
    ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    us[static_cast<size_t>(i)] = seconds_since(t) * 1e6;
  }
  std::sort(us.begin(), us.end());
  result("launch_sync_us_median", us[us.size() / 2]);
  result("launch_sync_us_p99", us[us.size() * 99 / 100]);
}

void launches(int n) {
  empty_kernel<<<1, 1>>>();
  ok(cudaDeviceSynchronize(), "warm-up");
  const auto t = Clock::now();
  for (int i = 0; i < n; ++i) empty_kernel<<<1, 1>>>();
  ok(cudaGetLastError(), "launch");
  ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  result("launches_per_s", n / seconds_since(t));
}

void bandwidth() {
  const size_t sizes[] = {4u << 10, 64u << 10, 1u << 20, 16u << 20, 256u << 20};
  const size_t largest = sizes[std::size(sizes) - 1];
  void* dev = nullptr;
  ok(cudaMalloc(&dev, largest), "cudaMalloc");
  std::vector<char> pageable(largest, 1);
  void* pinned = nullptr;
  ok(cudaMallocHost(&pinned, largest), "cudaMallocHost");
  std::memset(pinned, 2, largest);
  for (size_t size : sizes) {
    // Enough repetitions to time, few enough to stay quick: ~1 GiB or 200 copies.
    const int reps = static_cast<int>(std::clamp<size_t>((1ull << 30) / size, 3, 200));
    const std::string label = size >= (1u << 20) ? std::to_string(size >> 20) + "MiB"
                                                 : std::to_string(size >> 10) + "KiB";
    for (int kind = 0; kind < 2; ++kind) {
      void* host = kind == 0 ? static_cast<void*>(pageable.data()) : pinned;
      const char* k = kind == 0 ? "pageable" : "pinned";
      for (int dir = 0; dir < 2; ++dir) {
        auto copy = [&] {
          return dir == 0 ? cudaMemcpy(dev, host, size, cudaMemcpyHostToDevice)
                          : cudaMemcpy(host, dev, size, cudaMemcpyDeviceToHost);
        };
        ok(copy(), "cudaMemcpy (warm-up)");
        const auto t = Clock::now();
        for (int r = 0; r < reps; ++r) ok(copy(), "cudaMemcpy");
        const double gbs = static_cast<double>(size) * reps / seconds_since(t) / 1e9;
        result(std::string(dir == 0 ? "h2d_" : "d2h_") + k + "_" + label + "_GBps", gbs);
      }
    }
  }
  ok(cudaFreeHost(pinned), "cudaFreeHost");
  ok(cudaFree(dev), "cudaFree");
}

// Iterations so that one run takes about `ms` on this device (calibrated once).
int calibrate(float* out, int blocks, double ms) {
  int iterations = 1 << 14;
  for (;;) {
    const auto t = Clock::now();
    fma_kernel<<<blocks, 256>>>(out, iterations);
    ok(cudaDeviceSynchronize(), "calibration");
    const double took = seconds_since(t) * 1e3;
    if (took > ms / 4 || iterations > (1 << 28)) {
      return static_cast<int>(std::min(2e9, iterations * ms / std::max(took, 1e-3)));
    }
    iterations *= 4;
  }
}

void compute(int reps) {
  float* out = nullptr;
  ok(cudaMalloc(&out, sizeof(float)), "cudaMalloc");
  const int blocks = sm_count() * 8;
  // The same work natively and forwarded: the iteration count comes from
  // the environment when run.sh fixed it, else from a calibration here.
  int iterations = 0;
  if (const char* s = std::getenv("VGPU_BENCH_FMA_ITERATIONS")) iterations = std::atoi(s);
  if (iterations <= 0) iterations = calibrate(out, blocks, 200.0);
  result("compute_iterations", iterations);
  std::vector<double> ms;
  cudaEvent_t a, b;
  ok(cudaEventCreate(&a), "cudaEventCreate");
  ok(cudaEventCreate(&b), "cudaEventCreate");
  std::vector<double> event_ms;
  for (int r = 0; r < reps; ++r) {
    const auto t = Clock::now();
    ok(cudaEventRecord(a, 0), "cudaEventRecord");
    fma_kernel<<<blocks, 256>>>(out, iterations);
    ok(cudaEventRecord(b, 0), "cudaEventRecord");
    ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    ms.push_back(seconds_since(t) * 1e3);
    float e = 0;
    ok(cudaEventElapsedTime(&e, a, b), "cudaEventElapsedTime");
    event_ms.push_back(e);
  }
  std::sort(ms.begin(), ms.end());
  std::sort(event_ms.begin(), event_ms.end());
  result("compute_kernel_ms", ms[ms.size() / 2]);
  result("compute_kernel_event_ms", event_ms[event_ms.size() / 2]);
  ok(cudaFree(out), "cudaFree");
}

void meminfo() {
  size_t free = 0, total = 0;
  ok(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  result("mem_total_MiB", static_cast<double>(total >> 20));
  result("mem_free_MiB", static_cast<double>(free >> 20));
}

void fair(double secs) {
  float* out = nullptr;
  ok(cudaMalloc(&out, sizeof(float)), "cudaMalloc");
  const int blocks = sm_count() * 8;
  int iterations = 0;
  if (const char* s = std::getenv("VGPU_BENCH_FAIR_ITERATIONS")) iterations = std::atoi(s);
  if (iterations <= 0) iterations = calibrate(out, blocks, 2.0);
  const auto t = Clock::now();
  long kernels = 0;
  while (seconds_since(t) < secs) {
    for (int i = 0; i < 4; ++i) fma_kernel<<<blocks, 256>>>(out, iterations);
    ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    kernels += 4;
  }
  result("fair_kernels", static_cast<double>(kernels));
  result("fair_seconds", seconds_since(t));
  ok(cudaFree(out), "cudaFree");
}

void expect_recovery(const char* after) {
  ok(cudaDeviceReset(), "cudaDeviceReset");
  int* p = nullptr;
  ok(cudaMalloc(&p, 32 * sizeof(int)), "cudaMalloc after the reset");
  ok(cudaMemset(p, 0, 32 * sizeof(int)), "cudaMemset");
  fill<<<1, 32>>>(p, 1, 32);
  ok(cudaDeviceSynchronize(), "a kernel after the reset");
  int host[32];
  ok(cudaMemcpy(host, p, sizeof host, cudaMemcpyDeviceToHost), "cudaMemcpy");
  for (int v : host) {
    if (v != 1) fail(std::string("after ") + after + ", the device gives wrong results");
  }
  ok(cudaFree(p), "cudaFree");
  std::printf("ok   after %s, cudaDeviceReset and the device works again\n", after);
}

void fault() {
  fault_write<<<1, 32>>>(reinterpret_cast<int*>(16));  // an address nobody owns
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaErrorIllegalAddress) {
    fail(std::string("a kernel writing to address 16 gave ") + cudaGetErrorName(e) +
         ", expected cudaErrorIllegalAddress");
  }
  std::printf("ok   illegal address -> %s\n", cudaGetErrorName(e));
  expect_recovery("an illegal address");
}

void hang() {
  int* flag = nullptr;
  ok(cudaMalloc(&flag, sizeof(int)), "cudaMalloc");
  ok(cudaMemset(flag, 0, sizeof(int)), "cudaMemset");
  const auto t = Clock::now();
  hang_forever<<<1, 1>>>(flag);
  const cudaError_t e = cudaDeviceSynchronize();
  const double took = seconds_since(t);
  result("hang_ended_after_s", took);
  if (e != cudaErrorLaunchTimeout) {
    fail(std::string("a kernel that never ends gave ") + cudaGetErrorName(e) +
         ", expected cudaErrorLaunchTimeout");
  }
  std::printf("ok   endless kernel -> %s after %.1f s\n", cudaGetErrorName(e), took);
  expect_recovery("the watchdog");
}

int number(int argc, char** argv, int i, int fallback) {
  return argc > i ? std::atoi(argv[i]) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string mode = argc > 1 ? argv[1] : "all";
  int device = 0;
  ok(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  ok(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  std::printf("device %s, %zu MiB\n", prop.name, prop.totalGlobalMem >> 20);
  if (mode == "all") {
    latency(2000);
    launches(20000);
    bandwidth();
    compute(5);
  } else if (mode == "latency") {
    latency(number(argc, argv, 2, 2000));
  } else if (mode == "launches") {
    launches(number(argc, argv, 2, 20000));
  } else if (mode == "bandwidth") {
    bandwidth();
  } else if (mode == "compute") {
    compute(number(argc, argv, 2, 5));
  } else if (mode == "calibrate") {
    float* out = nullptr;
    ok(cudaMalloc(&out, sizeof(float)), "cudaMalloc");
    result("iterations", calibrate(out, sm_count() * 8, argc > 2 ? std::atof(argv[2]) : 200.0));
  } else if (mode == "meminfo") {
    meminfo();
  } else if (mode == "fair") {
    fair(argc > 2 ? std::atof(argv[2]) : 10.0);
  } else if (mode == "fault") {
    fault();
  } else if (mode == "hang") {
    hang();
  } else {
    fail("unknown mode " + mode + " (all latency launches bandwidth compute calibrate meminfo fair fault hang)");
  }
  std::printf("PASS bench\n");
  return 0;
}
