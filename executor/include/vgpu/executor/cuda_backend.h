// The `cuda` backend: the real GPU through the CUDA driver API.
//
//  - The daemon never links the driver. Each context runs in a worker process
//    of its own (vgpu-cuda-worker, next to vgpud), which opens libcuda.so.1
//    with dlopen, takes the device's primary context, and executes that
//    context's work. A machine without a driver builds and starts the daemon;
//    make_cuda_backend then says why it cannot be used.
//  - Why processes: CUDA cannot stop a running kernel, and NVIDIA's answer
//    for a context after a sticky error is to end the process that owns it.
//    The watchdog ends a kernel that runs past its limit by killing its
//    worker; a faulting kernel (illegal address, trap) costs its own worker.
//    Separate processes also mean separate GPU address spaces. The price is a
//    local round trip per call (docs/cuda-backend.md, docs/performance.md).
//  - Every handle and device pointer is checked in the daemon against the
//    context's own tables, as in `sim`; memory is charged to the tenant and
//    capped; cudaMemGetInfo shows the tenant its cap and its use.
//  - Bulk copies go through a pinned staging area per context, two slots, in
//    pipelined chunks.
//  - Each work item's GPU time is measured with CUDA events around it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "vgpu/executor/backend.h"

namespace vgpu::executor {

struct CudaConfig {
  int device = 0;  // ordinal as the driver numbers devices (after CUDA_VISIBLE_DEVICES)
  std::string driver_library = "libcuda.so.1";
  std::string worker_path;  // default: "vgpu-cuda-worker" next to /proc/self/exe
  // A work item (kernel, copy, ...) still running after this ends its
  // context: kLaunchTimeout, and the tenant starts over after a reset.
  std::chrono::milliseconds watchdog{10000};
  // Calls answered at once (allocation, module load with its JIT, ...).
  std::chrono::milliseconds call_limit{30000};
  // Starting a worker (process, cuInit, context).
  std::chrono::milliseconds start_limit{60000};
  // Image bytes (decompressed) one module may hold, all its entries together:
  // what one module load may cost the host in time and memory.
  uint64_t module_image_limit = kDefaultModuleImageLimit;
  // Host bytes one tenant's modules may hold, all its contexts together (0:
  // no limit); a load past it is refused with kMemoryAllocation.
  uint64_t tenant_host_limit = kDefaultTenantHostLimit;
  uint64_t staging_slot_bytes = 4ull << 20;  // x2 per context, page-locked
  bool pin_staging = true;
  size_t spare_workers = 2;  // started ahead, so a new context does not wait for one
  // Device memory shared out among tenants (caps apply within it); 0: the
  // memory the device reports.
  uint64_t device_memory = 0;
  // How a worker waits for the GPU: spin (lowest latency; one core while a
  // work item runs) or block (no core, some microseconds more per item).
  bool spin_wait = true;
};

// Starts a probe worker (driver, device, what it reports) and creates the
// backend. On failure *why says why (no driver, no such device, driver too
// old, worker missing) and the status is kNoDevice, kInvalidDevice,
// kInsufficientDriver, kInvalidValue (bad configuration) or
// kInitializationError.
Status make_cuda_backend(const CudaConfig& config, std::unique_ptr<Backend>* out, std::string* why);

// Applies the VGPU_CUDA_* environment variables to *config:
//   VGPU_CUDA_DEVICE (ordinal), VGPU_CUDA_WATCHDOG_MS, VGPU_CUDA_DRIVER
//   (library path), VGPU_CUDA_WORKER (executable), VGPU_CUDA_SPARE_WORKERS,
//   VGPU_CUDA_STAGING_KIB (per slot), VGPU_CUDA_MEMORY_MIB, VGPU_CUDA_WAIT
//   (spin or block). kInvalidValue and *why for a value that does not parse.
Status apply_cuda_env(CudaConfig* config, std::string* why);

}  // namespace vgpu::executor
