// Managed memory (cuMemAllocManaged) on a device without concurrent managed
// access, as the guest reports it (concurrentManagedAccess = 0).
//
// An allocation is device memory on the host plus a guest mapping at the
// same address, so one pointer works in kernels and on the CPU. The mapping is
// kept coherent in granules of 64 KiB, by page protection:
//   - device:  PROT_NONE. The CPU's first touch waits for the device to finish
//              and fetches the granule and the device granules after it (1
//              MiB, more while the CPU walks the allocation in order);
//   - clean:   PROT_READ, same bytes as the device. A write makes it dirty,
//              with the clean granules after it in the same way;
//   - dirty:   read-write; the CPU wrote it since the device last saw it.
// Before device work that may read managed memory (a launch, a copy or memset
// touching it), dirty granules are copied to the device in the work's stream;
// after work that may write it, the granules it may have written become
// "device" again. So a launch moves only what the CPU changed, and the CPU
// fetches only what it touches.
//
// Lock order: the managed lock before the connection lock. None of these may be
// called with the connection lock held.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace vgpu::driver::managed {

inline constexpr uint64_t kGranule = 64 * 1024;

// A new managed allocation of `size` bytes, zero-filled, at an address that is
// both the device's and the guest mapping's. `host_mapped`: it serves as
// mapped pinned memory (cuMemHostAlloc with DEVICEMAP), which kernels reach
// at the same address and pointer queries report as host memory.
CUresult allocate(size_t size, CUdeviceptr* out, bool host_mapped = false);
// Whether ptr lies in an allocation made with host_mapped.
bool host_mapped(uint64_t ptr);
// Frees `ptr` if it is a managed allocation's base: CUDA_ERROR_NOT_FOUND if it
// is not one (then it is ordinary device memory).
CUresult release(CUdeviceptr ptr);

// A module's __managed__ variable at [ptr, ptr + size), which the host
// allocated (page-aligned) with the module: mapped for the CPU, its first
// touch fetching the module's initial value. Idempotent.
// CUDA_ERROR_NOT_SUPPORTED (named in one line) if it does not start a page.
CUresult adopt(CUdeviceptr ptr, size_t size, const char* name);
// The module holding an adopted variable is unloaded: the mapping goes.
void forget(CUdeviceptr ptr);

// Whether any managed allocation lives (a relaxed check for the hot paths).
bool any();
// Whether [ptr, ptr + size) is inside one managed allocation.
bool contains(uint64_t ptr, uint64_t size = 1);

// Copies what the CPU dirtied to the device, queued in `stream` (so before
// any later work in it).
CUresult flush(uint64_t stream);
// Device work in flight may write [ptr, ptr + size): the CPU's copy of the
// granules it covers is stale. `size` 0: every managed allocation.
void device_may_write(uint64_t ptr, uint64_t size);
// Before a launch: flush, then every granule is the device's.
CUresult before_launch(uint64_t stream);
// Waits for the device and makes [ptr, ptr + size) the CPU's (prefetch to
// the host).
CUresult fetch(uint64_t ptr, uint64_t size);

// ---- the program's own memory registered as mapped (cuMemHostRegister with
// DEVICEMAP; managed_registered.cpp). Device memory of the same size mirrors
// [ptr, ptr + size) at another address, which kernels take. The range's
// whole pages are kept coherent by page protection, as managed memory is; the
// bytes of its first and last page when those are shared with other data
// (never protected, so that nothing else of the program faults) go to the
// device before each launch and come back at the next synchronising call.

// Registers [ptr, ptr + size): *device is the device address of ptr.
// CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED if its pages overlap another
// registered range's.
CUresult register_host(void* ptr, size_t size, CUdeviceptr* device);
// Gives the CPU the device's bytes, unprotects the pages and frees the device
// copy. CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED if ptr starts no registered range.
CUresult unregister_host(void* ptr);
// Whether [cpu, cpu + size) lies inside one registered range: *device is the
// device address of cpu.
bool registered_host(uint64_t cpu, uint64_t size, uint64_t* device);
// Whether [ptr, ptr + size) lies inside one registered range's device copy:
// *cpu (if given) is the CPU address of ptr.
bool registered_device(uint64_t ptr, uint64_t size, uint64_t* cpu = nullptr);
// At a synchronising call, once the device is done: what the device may have
// written to the unprotected bytes of registered ranges comes back.
void synchronized();

// Advice a program gave for a range, as cuMemRangeGetAttribute reads it back.
struct Advice {
  bool read_mostly = false;
  int preferred_location = CU_DEVICE_INVALID;
  int last_prefetch_location = CU_DEVICE_INVALID;
  bool accessed_by_device = false;
};
CUresult advise(uint64_t ptr, uint64_t size, CUmem_advise advice, int location);
void prefetched(uint64_t ptr, int location);
// The advice of the allocation holding `ptr`. False if none holds it.
bool advice(uint64_t ptr, Advice* out);

}  // namespace vgpu::driver::managed
