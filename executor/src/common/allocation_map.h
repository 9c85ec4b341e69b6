// The live device allocations of one context, keyed by device address, and
// the one check every range a call names must pass: it lies inside ONE live
// allocation. Pure bookkeeping, shared by the backends: the sim backend puts
// its own first-fit allocator around it (sim/allocation_table.h), the cuda
// backend records the addresses the driver hands out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

namespace vgpu::executor::common {

// Every allocation is charged (and, in sim, placed) in multiples of this.
inline constexpr uint64_t kAllocAlignment = 256;

enum class AllocKind : uint8_t {
  kUser,      // mem_alloc; freed by Free or Reset
  kVariable,  // a module's __device__/__constant__ variable; freed with the module
};

struct Allocation {
  uint64_t size = 0;      // bytes requested: the valid range
  uint64_t reserved = 0;  // bytes charged to the tenant (size rounded up)
  AllocKind kind = AllocKind::kUser;
  bool free_pending = false;  // a Free of it is queued (accept() saw it)
};

// Bytes a request of `size` is charged: rounded up to kAllocAlignment; 0 for
// 0 or a size that cannot be rounded.
uint64_t reserved_size(uint64_t size);

class AllocationMap {
 public:
  // Adds [addr, addr + a.size); false (nothing changed) if it overlaps a live one
  // or wraps around.
  bool insert(uint64_t addr, const Allocation& a);
  // The allocation starting exactly at `addr`, or nullptr.
  Allocation* find_start(uint64_t addr);
  const Allocation* find_start(uint64_t addr) const;
  // Removes the allocation starting at `addr`; false if there is none.
  bool erase(uint64_t addr);
  void clear() { live_.clear(); }

  // Whether [addr, addr + size) lies within one live allocation (size > 0);
  // *start is that allocation's address. With `allow_free_pending` false, an
  // allocation whose Free is queued counts as gone.
  bool resolve(uint64_t addr, uint64_t size, bool allow_free_pending, uint64_t* start) const;

  size_t count() const { return live_.size(); }
  uint64_t reserved_bytes() const;  // what the live allocations are charged
  bool empty() const { return live_.empty(); }
  const std::map<uint64_t, Allocation>& live() const { return live_; }

 private:
  std::map<uint64_t, Allocation> live_;  // device address -> allocation
};

}  // namespace vgpu::executor::common
