#include "allocation_table.h"

#include <iterator>

namespace vgpu::executor::sim {

AllocationTable::AllocationTable(uint64_t base, uint64_t span) : base_(base), span_(span) {
  gaps_.emplace(0, span);
}

uint64_t AllocationTable::allocate(uint64_t size, AllocKind kind, uint64_t align) {
  const uint64_t need = reserved_size(size);
  if (need == 0 || need > span_) return 0;
  for (auto it = gaps_.begin(); it != gaps_.end(); ++it) {
    const uint64_t gap = it->first, gap_size = it->second;
    // Padding before the aligned start stays a gap of its own.
    const uint64_t pad = ((base_ + gap + align - 1) & ~(align - 1)) - (base_ + gap);
    if (gap_size < pad || gap_size - pad < need) continue;
    const uint64_t offset = gap + pad;
    const uint64_t left = gap_size - pad - need;
    gaps_.erase(it);
    if (pad > 0) gaps_.emplace(gap, pad);
    if (left > 0) gaps_.emplace(offset + need, left);
    live_.insert(base_ + offset, Allocation{size, need, kind, false});
    return base_ + offset;
  }
  return 0;
}

void AllocationTable::release(uint64_t addr, uint64_t* hole_offset, uint64_t* hole_size) {
  uint64_t offset = addr - base_;
  uint64_t size = live_.find_start(addr)->reserved;
  live_.erase(addr);
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
  uint64_t start = 0;
  if (!live_.resolve(addr, size, allow_free_pending, &start)) return false;
  *offset = addr - base_;
  return true;
}

uint64_t AllocationTable::high_water() const {
  if (live_.empty()) return 0;
  const auto& last = *live_.live().rbegin();
  return last.first - base_ + last.second.reserved;
}

}  // namespace vgpu::executor::sim
