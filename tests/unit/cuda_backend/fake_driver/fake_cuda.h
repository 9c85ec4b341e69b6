// FAKE CUDA DRIVER, for tests only. Never shipped, never loaded by vgpud
// outside tests.
//
// An in-process stand-in for the handful of driver entry points the cuda
// backend uses (executor/src/cuda/driver_api.h), so its logic runs without a
// GPU. "Device memory" is host memory (a device pointer is the host address);
// modules are real fat binaries, parsed with vgpu's own parser, so kernels,
// parameter layouts and variables are what nvcc produced. Kernels "run" by
// name (the mangled name contains the word):
//
//   fill(int* p, int value, int n)   p[i] = value for i < n (checked against allocations)
//   spin(unsigned long long ns)      takes ns of (real) time
//   bump(int delta)                  adds delta to the module's __device__ int counter
//   hang(...)                        never ends: every later wait blocks until
//                                    release_hang() (or the process dies)
//   fault(...)                       sticky CUDA_ERROR_ILLEGAL_ADDRESS at the next wait
//   trap(...)                        sticky CUDA_ERROR_LAUNCH_FAILED at the next wait
//   crash(...)                       raises SIGSEGV in the calling process
//   anything else                    does nothing, successfully
//
// Two ways in: install() fills a DriverApi in this process (unit tests of the
// engine); libvgpu_fake_cuda.so exports cuGetProcAddress_v2 over the same
// functions, so a real vgpu-cuda-worker can load it as its "libcuda.so.1"
// (tests of the whole backend). There, the knobs come from VGPU_FAKE_CUDA_*.
#pragma once

#include <cstdint>
#include <string>

#include "driver_api.h"

namespace vgpu::test::fake_cuda {

struct Knobs {
  int device_count = 1;
  int driver_version = 13000;
  bool init_fails = false;         // cuInit -> CUDA_ERROR_NO_DEVICE
  std::string missing_entry;       // cuGetProcAddress does not know this name
  std::string skew_kernel;         // cuFuncGetParamInfo moves this kernel's first parameter by 4
  uint64_t memory_bytes = 1ull << 30;  // device memory; allocations past it fail
  bool register_fails = false;     // cuMemHostRegister -> CUDA_ERROR_NOT_PERMITTED
};

struct Stats {
  int64_t live_allocations = 0;
  int64_t live_events = 0;
  int64_t live_streams = 0;
  int64_t live_modules = 0;
  int64_t primary_retains = 0;   // retained minus released
  int64_t registered = 0;        // host ranges page-locked now
  int64_t h2d_copies = 0, d2h_copies = 0;  // cuMemcpy*Async calls
  int64_t launches = 0;
  int64_t cooperative_launches = 0;  // through cuLaunchKernelEx
  int64_t live_textures = 0;
  uint64_t last_launch_param_bytes = 0;
};

// Resets every knob and all state (no live objects, no sticky error).
void reset(const Knobs& knobs = {});
// Reads VGPU_FAKE_CUDA_DEVICES, _DRIVER_VERSION, _NO_INIT, _MISSING, _SKEW,
// _MEMORY_MIB, _NO_REGISTER.
Knobs knobs_from_env();
Stats stats();
// Ends a hang(): blocked waits return (the kernel "finished").
void release_hang();

void install(executor::cuda::DriverApi* api);
// The lookup libvgpu_fake_cuda.so exports as cuGetProcAddress_v2.
void* lookup(const char* name);

}  // namespace vgpu::test::fake_cuda
