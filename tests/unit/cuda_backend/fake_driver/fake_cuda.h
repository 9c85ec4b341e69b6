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
//   ...heap...(...)                  uses the device heap: cuCtxSetLimit cannot change its
//                                    size from then on
//   work(unsigned long long ns)      takes ns of modeled time (below), not slept in the
//                                    launch (the first parameter must be an 8-byte unsigned)
//   anything else                    does nothing, successfully
//
// Timing: a modeled GPU on steady_clock, with no device thread, so benchmarks
// can measure how busy a GPU stays without one. Work is placed when issued:
// start = max(now, its stream's last end, its engine's last end), end = start
// + cost. One compute engine (kernels of all streams take turns) and one copy
// engine (a copy overlaps another stream's kernel); the null stream and
// CU_STREAM_LEGACY are one process-wide stream. Costs, all 0 by default (work
// then ends as it is issued): kernel_ns + blocks * block_ns a launch, copy_ns
// + bytes / copy_bytes_per_ns a copy or memset. What a kernel does to memory
// (fill, bump, say...) still happens at issue. An event records when the work
// before it on its stream ends; cuEventSynchronize, cuStreamSynchronize and
// cuCtxSynchronize (this process's work) sleep until then. spin() alone
// sleeps for real in the launch (the watchdog's tests need a launch that
// takes time). With device_file, the engines and counters live in that file
// (SharedDevice), so worker processes share one modeled GPU and a benchmark
// reads it.
//
// Two ways in: install() fills a DriverApi in this process (unit tests of the
// engine); libvgpu_fake_cuda.so exports cuGetProcAddress_v2 over the same
// functions, so a real vgpu-cuda-worker can load it as its "libcuda.so.1"
// (tests of the whole backend). There, the knobs come from VGPU_FAKE_CUDA_*.
#pragma once

#include <atomic>
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
  // The timing model's costs (modeled ns; 0: no time).
  uint64_t kernel_ns = 0;          // every launch but a work() kernel's
  uint64_t block_ns = 0;           // and this per block of the grid
  uint64_t copy_ns = 0;            // every copy or memset
  double copy_bytes_per_ns = 0;    // and its bytes at this rate (GB/s); 0: copy_ns alone
  std::string device_file;         // the engines and counters live here, shared (else in-process)
};

// The modeled device: in device_file, mapped MAP_SHARED by every process that
// names it (a benchmark can map it and read), else in this process. All
// times are steady_clock ns. Zero-filled is fresh: nothing to initialise.
struct SharedDevice {
  std::atomic<uint64_t> compute_until, copy_until;  // when each engine's last work ends
  std::atomic<uint64_t> kernel_busy_ns;  // modeled kernel time issued (kernels take turns, so
                                         // busy share = kernel_busy_ns / (last_end - first_start))
  std::atomic<uint64_t> copy_busy_ns;
  std::atomic<uint64_t> kernels, copies;  // issued, costly or not
  std::atomic<uint64_t> first_start_ns, last_end_ns;  // of any work of nonzero cost (first_start: 0 until set)
};

struct Stats {
  int64_t live_allocations = 0;
  int64_t live_events = 0;
  int64_t live_streams = 0;
  int64_t streams_created = 0;
  int64_t live_modules = 0;
  int64_t primary_retains = 0;   // retained minus released
  int64_t registered = 0;        // host ranges page-locked now
  int64_t h2d_copies = 0, d2h_copies = 0;  // cuMemcpy*Async calls
  int64_t copies_2d = 0;                   // cuMemcpy2DAsync calls
  int64_t launches = 0;
  int64_t cooperative_launches = 0;  // through cuLaunchKernelEx
  int64_t cluster_launches = 0;      // with a cluster of more than one block
  uint32_t last_cluster[3] = {};     // that launch's shape
  int64_t live_textures = 0;
  uint64_t last_launch_param_bytes = 0;
  uint64_t modeled_kernel_ns = 0;  // this process's share of kernel_busy_ns
  uint64_t heap_bytes = 8u << 20;  // CU_LIMIT_MALLOC_HEAP_SIZE
};

// Resets every knob and all state (no live objects, no sticky error, an idle
// timeline; a device file's counts are other processes' too, so kept).
void reset(const Knobs& knobs = {});
// Reads VGPU_FAKE_CUDA_DEVICES, _DRIVER_VERSION, _NO_INIT, _MISSING, _SKEW,
// _MEMORY_MIB, _NO_REGISTER, _KERNEL_NS, _BLOCK_NS, _COPY_NS, _COPY_GBPS,
// _DEVICE_FILE.
Knobs knobs_from_env();
Stats stats();
// This process's view of the modeled device (valid until the next reset()).
SharedDevice* shared_device();
// Ends a hang(): blocked waits return (the kernel "finished").
void release_hang();

void install(executor::cuda::DriverApi* api);
// The lookup libvgpu_fake_cuda.so exports as cuGetProcAddress_v2.
void* lookup(const char* name);

}  // namespace vgpu::test::fake_cuda
