// The live allocations of one context, keyed by device address, and a
// first-fit allocator over the context's slot. Pure bookkeeping: no memory is
// touched here (the Arena backs what this hands out).
//
// Every range a call names must lie inside ONE live allocation; the lookup
// (common/allocation_map.h, shared with the cuda backend) answers that with an
// offset into the slot, or not at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

#include "common/allocation_map.h"

namespace vgpu::executor::sim {

using common::AllocKind;
using common::Allocation;
using common::kAllocAlignment;

class AllocationTable {
 public:
  AllocationTable(uint64_t base, uint64_t span);

  uint64_t base() const { return base_; }
  // Bytes a request of `size` reserves (0 if it cannot fit any slot).
  static uint64_t reserved_size(uint64_t size) { return common::reserved_size(size); }

  // First fit at a multiple of `align` (a power of two, at least
  // kAllocAlignment); returns the device address, or 0 when no gap is large
  // enough.
  uint64_t allocate(uint64_t size, AllocKind kind, uint64_t align = kAllocAlignment);

  // The allocation starting exactly at `addr`, or nullptr.
  Allocation* find_start(uint64_t addr) { return live_.find_start(addr); }

  // Removes the allocation starting at `addr` (it must exist). Sets
  // [*hole_offset, +*hole_size) to the free gap it now belongs to (merged with
  // its neighbours), whose whole pages can be given back.
  void release(uint64_t addr, uint64_t* hole_offset, uint64_t* hole_size);

  // Slot offset of [addr, addr + size) if it lies within one live allocation
  // (size > 0). With `allow_free_pending` false, an allocation whose Free is
  // queued counts as gone.
  bool resolve(uint64_t addr, uint64_t size, bool allow_free_pending, uint64_t* offset) const;

  // End offset of the highest live allocation (0 if none).
  uint64_t high_water() const;
  size_t count() const { return live_.count(); }
  uint64_t reserved_bytes() const { return live_.reserved_bytes(); }
  const std::map<uint64_t, Allocation>& live() const { return live_.live(); }

 private:
  const uint64_t base_;
  const uint64_t span_;
  common::AllocationMap live_;          // device address -> allocation
  std::map<uint64_t, uint64_t> gaps_;  // slot offset -> size of a free gap
};

}  // namespace vgpu::executor::sim
