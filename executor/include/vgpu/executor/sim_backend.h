// The `sim` backend: a CPU model of a GPU, shipped with the product so that
// vgpud, its tests and its users run without a GPU (like libvirt's test
// driver). It implements the whole Backend contract:
//
//  - Device memory lives in host memory: one memfd per context, mapped in the
//    daemon, addressed through a device address range of its own (a "slot",
//    see docs below) so that a pointer from another context never resolves.
//  - Kernels run as CPU implementations from plug-ins (vgpu/sim_kernel.h),
//    in one worker process per context that maps only that context's memory:
//    a plug-in that faults or never returns costs its own context, nothing
//    else.
//  - Time is modeled: a launch keeps the engine busy for
//        modeled_ns = kernel_base_ns + ns_per_thread * (grid threads)
//    (or what the plug-in reports), in real time, so the scheduler and the
//    usage ledger see durations that behave like a GPU's. A launch whose CPU
//    implementation runs longer than that takes (and is charged) its run
//    time. The charge is this device time, not the wall time the launch
//    took on the host: a loaded host delays the engine, but a GPU would not
//    charge a tenant for that.
//
// Device address layout: contexts get slots of slot_bytes(config) each,
// starting at kSimSlotRegionBase and never reaching kSimSlotRegionEnd. That
// range sits above the sanitizers' shadow memory and below where Linux puts
// executables, the heap and mmap areas in a fresh process, so the worker can
// map the slot at the same address (MAP_FIXED_NOREPLACE).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vgpu/executor/backend.h"

namespace vgpu::executor {

inline constexpr uint64_t kGiB = 1ull << 30;
inline constexpr uint64_t kSimSlotRegionBase = 0x2000'0000'0000ull;  // 32 TiB
inline constexpr uint64_t kSimSlotRegionEnd = 0x5000'0000'0000ull;   // 80 TiB
inline constexpr uint64_t kSimSlotGuard = kGiB;  // unmapped gap after each slot

struct SimConfig {
  uint64_t device_memory = 16 * kGiB;  // what the device reports and shares out
  uint32_t device_index = 0;           // which of the host's sim GPUs (its UUID's last bytes)
  std::vector<std::string> plugin_paths;  // kernel implementations, loaded by workers
  std::string worker_path;  // default: "vgpu-sim-worker" next to /proc/self/exe
  // Modeled launch duration: kernel_base_ns + ns_per_thread * total threads
  // (grid x block). A plug-in may replace the estimate with its own.
  uint64_t kernel_base_ns = 5000;
  double ns_per_thread = 0.01;
  // A launch that runs (or is modeled to run) longer than this is killed:
  // kLaunchTimeout, and the context is faulted.
  std::chrono::milliseconds watchdog{10000};
  // Image bytes (decompressed) one module may hold, all its entries together:
  // what one module load may cost the host in time and memory.
  uint64_t module_image_limit = kDefaultModuleImageLimit;
  // Host bytes one tenant's modules may hold, all its contexts together (0:
  // no limit); a load past it is refused with kMemoryAllocation.
  uint64_t tenant_host_limit = kDefaultTenantHostLimit;
  // Host threads a worker's PTX interpreter runs a grid's CTAs on (0: as many
  // as the CPUs vgpud may use). The scheduler gives the device to one tenant
  // at a time, so its worker may use them all, as its kernel would a GPU.
  unsigned interpreter_threads = 0;
};

// Bytes of device address space a context's slot spans: device_memory rounded
// up to a GiB (one context can at most fill the device).
uint64_t sim_slot_bytes(const SimConfig& config);

// Checks the configuration (worker executable, plug-ins loadable: a worker is
// started once to dlopen them) and creates the backend. kInvalidValue for a
// bad configuration, kInitializationError when the worker or a plug-in cannot
// be started or loaded; the reason is logged.
Status make_sim_backend(const SimConfig& config, std::unique_ptr<Backend>* out);

}  // namespace vgpu::executor
