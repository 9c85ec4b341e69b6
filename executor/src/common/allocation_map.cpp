#include "common/allocation_map.h"

#include <iterator>

namespace vgpu::executor::common {

uint64_t reserved_size(uint64_t size) {
  if (size == 0 || size > (UINT64_MAX - kAllocAlignment)) return 0;
  return (size + kAllocAlignment - 1) / kAllocAlignment * kAllocAlignment;
}

bool AllocationMap::insert(uint64_t addr, const Allocation& a) {
  if (a.size == 0 || a.size > UINT64_MAX - addr) return false;
  auto next = live_.lower_bound(addr);
  if (next != live_.end() && next->first < addr + a.size) return false;
  if (next != live_.begin()) {
    const auto& [paddr, prev] = *std::prev(next);
    if (paddr + prev.size > addr) return false;
  }
  live_.emplace_hint(next, addr, a);
  return true;
}

Allocation* AllocationMap::find_start(uint64_t addr) {
  auto it = live_.find(addr);
  return it == live_.end() ? nullptr : &it->second;
}

const Allocation* AllocationMap::find_start(uint64_t addr) const {
  auto it = live_.find(addr);
  return it == live_.end() ? nullptr : &it->second;
}

bool AllocationMap::erase(uint64_t addr) { return live_.erase(addr) > 0; }

bool AllocationMap::resolve(uint64_t addr, uint64_t size, bool allow_free_pending,
                            uint64_t* start) const {
  if (size == 0) return false;
  auto it = live_.upper_bound(addr);
  if (it == live_.begin()) return false;
  --it;
  const Allocation& a = it->second;
  const uint64_t into = addr - it->first;  // addr >= it->first
  if (into >= a.size || size > a.size - into) return false;
  if (a.free_pending && !allow_free_pending) return false;
  *start = it->first;
  return true;
}

uint64_t AllocationMap::reserved_bytes() const {
  uint64_t total = 0;
  for (const auto& [addr, a] : live_) total += a.reserved;
  return total;
}

}  // namespace vgpu::executor::common
