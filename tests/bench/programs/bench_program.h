// What the benchmark programs share: a clock, a summary of samples, and the
// output format the drivers parse (`result NAME VALUE`, one per line; any
// other line is for people). A failed CUDA call ends the program with status 1.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace bp {

inline double now_ns() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline void check(cudaError_t e, const char* what, int line) {
  if (e == cudaSuccess) return;
  std::printf("error: line %d: %s: %s\n", line, what, cudaGetErrorString(e));
  std::exit(1);
}

inline void result(const char* name, double value) { std::printf("result %s %.6g\n", name, value); }

// Prints NAME_median, NAME_p99 and NAME_min of `samples` (sorted in place).
inline void results(const char* name, std::vector<double>& samples) {
  if (samples.empty()) return;
  std::sort(samples.begin(), samples.end());
  char key[128];
  std::snprintf(key, sizeof key, "%s_median", name);
  result(key, samples[samples.size() / 2]);
  std::snprintf(key, sizeof key, "%s_p99", name);
  result(key, samples[std::min(samples.size() - 1, samples.size() * 99 / 100)]);
  std::snprintf(key, sizeof key, "%s_min", name);
  result(key, samples.front());
}

inline long arg(int argc, char** argv, int i, long fallback) {
  return argc > i ? std::strtol(argv[i], nullptr, 10) : fallback;
}

}  // namespace bp

#define BP_OK(call) ::bp::check((call), #call, __LINE__)
