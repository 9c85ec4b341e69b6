// Helpers shared by the CUDA test programs (host code only).
//
// Every program prints one short line per check and ends with exactly one of
//   PASS <name>            (exit status 0)
//   FAIL <name>: <why>     (exit status 1)
// so a test harness can read either the exit status or the last line.
#pragma once

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace vt {

inline const char* g_name = "program";

inline void set_name(const char* name) {
  g_name = name;
  // Lines must reach a pipe in order even if the program dies afterwards.
  setvbuf(stdout, nullptr, _IOLBF, 0);
}

[[noreturn]] inline void fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::printf("FAIL %s: ", g_name);
  std::vprintf(fmt, ap);
  std::printf("\n");
  va_end(ap);
  std::fflush(stdout);
  std::exit(1);
}

[[noreturn]] inline void pass() {
  std::printf("PASS %s\n", g_name);
  std::fflush(stdout);
  std::exit(0);
}

// One check: prints "ok   <what>" or fails the program with <what>.
inline void check(bool cond, const char* fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (!cond) fail("%s", what);
  std::printf("ok   %s\n", what);
}

inline const char* err_text(cudaError_t e) {
  static thread_local char buf[256];
  std::snprintf(buf, sizeof buf, "%s (%d: %s)", cudaGetErrorName(e), static_cast<int>(e),
                cudaGetErrorString(e));
  return buf;
}

inline void cuda_ok(cudaError_t e, const char* call, int line) {
  if (e != cudaSuccess) fail("line %d: %s returned %s", line, call, err_text(e));
}

}  // namespace vt

// A CUDA call that must succeed.
#define CUDA_OK(call) ::vt::cuda_ok((call), #call, __LINE__)

// A kernel launch (<<<>>>) that must have been accepted.
#define LAUNCH_OK() ::vt::cuda_ok(cudaGetLastError(), "kernel launch", __LINE__)
