// The sim's PTX interpreter on one host thread and on several: the time of
// three kernels from tests/unit/sim_ptx/kernels.cu (a vector add, a tiled
// matrix product with barriers, a histogram of global atomics), each run with
// host_threads 1 (the baseline) and with every CPU this process may use, and
// their ratio. Each result is checked against the CPU's, so a faster wrong
// answer does not count. Figures are recorded in docs/performance.md.
//
//   interpreter_bench [--quick]
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "ptx/ptx_interpreter.h"
#include "ptx/ptx_program.h"
#include "support/stats.h"

namespace ptx = vgpu::executor::sim::ptx;

namespace {

struct Params {
  std::vector<uint8_t> bytes;
  template <typename T>
  Params& add(T v) {
    const size_t off = (bytes.size() + alignof(T) - 1) & ~(alignof(T) - 1);
    bytes.resize(off + sizeof(T));
    std::memcpy(bytes.data() + off, &v, sizeof(T));
    return *this;
  }
};

// Best of `reps` runs, in milliseconds; -1 if the kernel failed.
double time_ms(const ptx::Program& p, const char* entry, ptx::Launch l, int reps,
               const std::function<void()>& reset) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    reset();
    const auto start = std::chrono::steady_clock::now();
    const ptx::Result res = ptx::run(p, entry, l, {});
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (res.outcome != ptx::Outcome::kOk) {
      std::fprintf(stderr, "%s: %s\n", entry, res.message.c_str());
      return -1;
    }
    best = std::min(best, ms);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && !std::strcmp(argv[1], "--quick");
  if (argc > 1 && !quick) {
    std::fprintf(stderr, "usage: interpreter_bench [--quick]\n");
    return 2;
  }
  std::ifstream f(VGPU_BENCH_PTX);
  std::stringstream text;
  text << f.rdbuf();
  std::string why;
  const auto program = ptx::parse(text.str(), &why);
  if (!program) {
    std::fprintf(stderr, "cannot parse %s: %s\n", VGPU_BENCH_PTX, why.c_str());
    return 1;
  }
  cpu_set_t cpus;
  const unsigned threads = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? std::max(2, CPU_COUNT(&cpus)) : 2;
  std::printf("The sim's PTX interpreter: one host thread against %u\n", threads);
  std::printf("%s\n\n", vgpu::bench::machine_line().c_str());
  std::printf("  %-34s %12s %12s %8s\n", "kernel", "1 thread ms", "N threads ms", "speedup");

  const int reps = quick ? 1 : 3;
  bool all_right = true;
  auto report = [&](const char* what, double one, double many, bool right) {
    all_right = all_right && right && one >= 0 && many >= 0;
    std::printf("  %-34s %12.1f %12.1f %7.2fx%s\n", what, one, many, one / many, right ? "" : "  WRONG RESULT");
  };

  {  // vector add: 21 instructions a thread, no barriers
    const int n = quick ? 1 << 18 : 1 << 22;
    std::vector<float> a(n), b(n), c(n);
    for (int i = 0; i < n; ++i) { a[i] = float(i); b[i] = float(2 * i); }
    Params p = Params().add(a.data()).add(b.data()).add(c.data()).add(n);
    ptx::Launch l{{uint32_t(n / 256), 1, 1}, {256, 1, 1}, 0, p.bytes.data(), p.bytes.size()};
    auto reset = [&] { std::fill(c.begin(), c.end(), 0.f); };
    const double one = time_ms(*program, "vector_add", l, reps, reset);
    l.host_threads = threads;
    const double many = time_ms(*program, "vector_add", l, reps, reset);
    bool right = true;
    for (int i = 0; i < n; ++i) right = right && c[i] == float(3 * i);
    report(("vector_add, " + std::to_string(n >> 10) + "K threads").c_str(), one, many, right);
  }
  {  // tiled matrix product: shared memory and barriers
    const int n = quick ? 64 : 256;
    std::vector<float> a(n * n), b(n * n), c(n * n), want(n * n, 0.f);
    for (int i = 0; i < n * n; ++i) { a[i] = float(i % 7); b[i] = float(i % 5); }
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < n; ++k)
        for (int j = 0; j < n; ++j) want[i * n + j] += a[i * n + k] * b[k * n + j];
    Params p = Params().add(a.data()).add(b.data()).add(c.data()).add(n);
    ptx::Launch l{{uint32_t(n / 8), uint32_t(n / 8), 1}, {8, 8, 1}, 0, p.bytes.data(), p.bytes.size()};
    auto reset = [&] { std::fill(c.begin(), c.end(), 0.f); };
    const double one = time_ms(*program, "matmul_tiled", l, reps, reset);
    l.host_threads = threads;
    const double many = time_ms(*program, "matmul_tiled", l, reps, reset);
    report(("matmul_tiled, " + std::to_string(n) + "x" + std::to_string(n)).c_str(), one, many, c == want);
  }
  {  // histogram: every thread an atomicAdd on one of 16 global bins
    const int n = quick ? 1 << 18 : 1 << 22;
    std::vector<unsigned char> data(n);
    std::vector<int> bins(16), want(16, 0);
    for (int i = 0; i < n; ++i) { data[i] = (unsigned char)(i * 37 + 11); ++want[data[i] % 16]; }
    Params p = Params().add(data.data()).add(n).add(bins.data());
    ptx::Launch l{{uint32_t(n / 256), 1, 1}, {256, 1, 1}, 0, p.bytes.data(), p.bytes.size()};
    auto reset = [&] { std::fill(bins.begin(), bins.end(), 0); };
    const double one = time_ms(*program, "histogram", l, reps, reset);
    const bool right_one = bins == want;
    l.host_threads = threads;
    const double many = time_ms(*program, "histogram", l, reps, reset);
    report(("histogram, " + std::to_string(n >> 10) + "K atomics").c_str(), one, many, right_one && bins == want);
  }
  return all_right ? 0 : 1;
}
