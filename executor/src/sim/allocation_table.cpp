#include "allocation_table.h"

#include <iterator>

namespace vgpu::executor::sim {

AllocationTable::AllocationTable(uint64_t base, uint64_t span) : base_(base), span_(span) {
  gaps_.emplace(0, span);
}

uint64_t AllocationTable::reserved_size(uint64_t size) {
  if (size == 0 || size > (UINT64_MAX - kAllocAlignment)) return 0;
  return (size + kAllocAlignment - 1) / kAllocAlignment * kAllocAlignment;
}

uint64_t AllocationTable::allocate(uint64_t size, AllocKind kind) {
  const uint64_t need = reserved_size(size);
  if (need == 0 || need > span_) return 0;
  for (auto it = gaps_.begin(); it != gaps_.end(); ++it) {
    if (it->second < need) continue;
    const uint64_t offset = it->first;
    const uint64_t left = it->second - need;
    gaps_.erase(it);
    if (left > 0) gaps_.emplace(offset + need, left);
    live_.emplace(base_ + offset, Allocation{size, need, kind, false});
    return base_ + offset;
  }
  return 0;
}

Allocation* AllocationTable::find_start(uint64_t addr) {
  auto it = live_.find(addr);
  return it == live_.end() ? nullptr : &it->second;
}

void AllocationTable::release(uint64_t addr, uint64_t* hole_offset, uint64_t* hole_size) {
  auto it = live_.find(addr);
  uint64_t offset = addr - base_;
  uint64_t size = it->second.reserved;
  live_.erase(it);
  // Merge with the gap after, then the gap before.
  auto next = gaps_.lower_bound(offset);
  if (next != gaps_.end() && next->first == offset + size) {
    size += next->second;
    next = gaps_.erase(next);
  }
  if (next != gaps_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      gaps_.erase(prev);
    }
  }
  gaps_.emplace(offset, size);
  *hole_offset = offset;
  *hole_size = size;
}

bool AllocationTable::resolve(uint64_t addr, uint64_t size, bool allow_free_pending,
                              uint64_t* offset) const {
  if (size == 0) return false;
  auto it = live_.upper_bound(addr);
  if (it == live_.begin()) return false;
  --it;
  const Allocation& a = it->second;
  const uint64_t into = addr - it->first;  // addr >= it->first
  if (into >= a.size || size > a.size - into) return false;
  if (a.free_pending && !allow_free_pending) return false;
  *offset = addr - base_;
  return true;
}

uint64_t AllocationTable::high_water() const {
  if (live_.empty()) return 0;
  const auto& last = *live_.rbegin();
  return last.first - base_ + last.second.reserved;
}

}  // namespace vgpu::executor::sim
