// The state behind managed memory (managed_memory.h), shared by its two
// files: managed_memory.cpp (allocations, the fault handler, flushes) and
// managed_registered.cpp (existing host memory registered as mapped). Not for
// other callers: they use managed_memory.h.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "connection.h"
#include "managed_memory.h"

namespace vgpu::driver::managed::detail {

enum class State : uint8_t { kDevice, kClean, kDirty };

inline constexpr uint64_t kPage = 4096;
// Granules one fault fetches (or marks dirty), from the one touched on: 1
// MiB, doubled while the faults walk the allocation in order, up to 64 MiB.
// Each fetch is a round trip through the host's queue, and each dirtying a
// signal: a CPU loop over an array then costs a few of either.
inline constexpr size_t kFirstAhead = 16;
inline constexpr size_t kMostAhead = 1024;

inline uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }
inline uint64_t round_down(uint64_t v, uint64_t to) { return v / to * to; }

// Memory the CPU reaches at [base, base + mapped), kept coherent with device
// memory at base + device_delta (0 for managed memory; registered host memory
// lies elsewhere than its device copy).
struct Allocation {
  uint64_t base = 0;          // page-aligned; what the program sees
  uint64_t size = 0;          // bytes the program asked for
  uint64_t mapped = 0;        // the guest mapping's length (whole pages)
  uint64_t device_base = 0;   // what the host allocated (0: a module's variable)
  uint64_t device_delta = 0;  // device address = CPU address + this (mod 2^64)
  std::vector<State> granules;
  bool all_device = false;    // every granule is kDevice: nothing to invalidate
  bool host_mapped = false;   // mapped pinned memory (cuMemHostAlloc with DEVICEMAP)
  bool registered = false;    // the program's own memory (cuMemHostRegister with DEVICEMAP)
  Advice advice;
  // Where the next fault of an in-order walk would land, and how far the
  // last one reached ahead (one pair for fetches, one for writes).
  size_t next_read = SIZE_MAX, read_ahead = kFirstAhead;
  size_t next_write = SIZE_MAX, write_ahead = kFirstAhead;

  uint64_t granule_start(size_t g) const { return base + g * kGranule; }
  uint64_t device(uint64_t cpu) const { return cpu + device_delta; }
  // Bytes of granule g that belong to the allocation (what copies move).
  uint64_t granule_bytes(size_t g) const { return std::min(kGranule, size - g * kGranule); }
  // Bytes of granule g that the mapping covers (what protections change).
  uint64_t granule_pages(size_t g) const { return std::min(kGranule, mapped - g * kGranule); }
};

// Guards everything below and the registrations of managed_registered.cpp.
extern std::mutex mu;
// By base. Leaked: NVIDIA's runtime unloads modules (and so forgets managed
// variables) from its exit handlers, after static destructors.
extern std::map<uint64_t, Allocation>& allocations;
extern std::atomic<int> live;             // allocations and registrations
extern std::atomic<bool> maybe_dirty;     // some granule may be kDirty
// Some registered range has bytes the CPU owns outside page protection.
extern std::atomic<bool> edges_pending;
// Device work queued since the CPU last waited for the device: a fetch
// must wait first.
extern bool device_busy;

void install_fault_handler();
void protect(const Allocation& a, size_t first, size_t last, int prot);
// The allocation whose mapping holds ptr, or null.
Allocation* holding(uint64_t ptr);
// Granule indexes of `a` that [ptr, ptr + size) touches.
void granule_span(const Allocation& a, uint64_t ptr, uint64_t size, size_t* first, size_t* last);
// Makes granules [first, last) of `a` the CPU's (mu held, connection not).
void fetch_granules(Allocation& a, size_t first, size_t last);
// Granules [first, last) in kClean or kDirty become kDevice (mu held).
void invalidate(Allocation& a, size_t first, size_t last);
// Frees a host allocation (connection lock held).
void free_device(Connection& c, uint64_t device_base) REQUIRES(c.mutex());
// A fetch or flush failure is the program's to see at its next
// synchronising call, like any asynchronous failure.
void defer(Connection& c, Status s) REQUIRES(c.mutex());

// managed_registered.cpp's part of flush, device_may_write and release (mu held).
// Copies the bytes of registered ranges that the CPU owns and page protection
// cannot follow to the device, queued in `stream`.
Status flush_registered(Connection& c, uint64_t stream) REQUIRES(c.mutex());
// Device work may write every registered range.
void registered_written();
// Device work may write device addresses [ptr, ptr + size): true if they are a
// registered range's (its CPU copy is then stale there).
bool registered_written(uint64_t ptr, uint64_t size);
// Whether [ptr, ptr + size) lies inside one registered range's device copy;
// *cpu (if given) is the CPU address of ptr.
bool in_registered_device(uint64_t ptr, uint64_t size, uint64_t* cpu = nullptr);

// Runs of consecutive granules in `state` within [first, last), as fn(from, to).
template <class Fn>
void for_runs(const Allocation& a, size_t first, size_t last, State state, Fn fn) {
  for (size_t g = first; g < last;) {
    if (a.granules[g] != state) {
      ++g;
      continue;
    }
    size_t end = g;
    while (end < last && a.granules[end] == state) ++end;
    fn(g, end);
    g = end;
  }
}

}  // namespace vgpu::driver::managed::detail
