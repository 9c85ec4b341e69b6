#include "pinned_area.h"

namespace vgpu::intercept {

PinnedArea::PinnedArea(uint64_t begin, uint64_t size) : end_(begin + size), size_(size) {
  if (size > 0) free_[begin] = size;
}

std::optional<uint64_t> PinnedArea::allocate(uint64_t size) {
  if (size == 0) size = 1;
  if (size > size_) return std::nullopt;
  size = (size + kPage - 1) & ~(kPage - 1);
  for (auto it = free_.rbegin(); it != free_.rend(); ++it) {
    if (it->second < size) continue;
    const uint64_t offset = it->first + it->second - size;
    if (it->second == size) {
      free_.erase(std::next(it).base());
    } else {
      it->second -= size;
    }
    live_[offset] = size;
    in_use_ += size;
    return offset;
  }
  return std::nullopt;
}

bool PinnedArea::release(uint64_t offset) {
  auto it = live_.find(offset);
  if (it == live_.end()) return false;
  uint64_t begin = offset, size = it->second;
  in_use_ -= size;
  live_.erase(it);
  // Merge with the free ranges on either side.
  auto next = free_.lower_bound(begin);
  if (next != free_.end() && next->first == begin + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == begin) {
      begin = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_[begin] = size;
  return true;
}

bool PinnedArea::holds(uint64_t offset, uint64_t size) const {
  auto it = live_.upper_bound(offset);
  if (it == live_.begin()) return false;
  --it;
  return offset - it->first <= it->second && size <= it->second - (offset - it->first);
}

}  // namespace vgpu::intercept
