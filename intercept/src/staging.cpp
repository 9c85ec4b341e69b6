#include "staging.h"

namespace vgpu::intercept {

namespace {
constexpr uint64_t kAlign = 64;
uint64_t align_up(uint64_t v) { return (v + kAlign - 1) & ~(kAlign - 1); }
}  // namespace

std::optional<uint64_t> Staging::try_alloc(uint64_t size) {
  size = align_up(size == 0 ? 1 : size);
  if (size > capacity_) return std::nullopt;
  uint64_t offset = head_;
  uint64_t gap = 0;
  if (offset + size > capacity_) {  // does not fit before the end: wrap, wasting the rest
    gap = capacity_ - offset;
    offset = 0;
  }
  if (used_ + gap + size > capacity_) return std::nullopt;
  if (gap) live_.push_back({head_, gap, true});
  live_.push_back({offset, size, false});
  used_ += gap + size;
  head_ = offset + size == capacity_ ? 0 : offset + size;
  return offset;
}

void Staging::release(uint64_t offset) {
  for (auto& b : live_) {
    if (b.offset == offset && !b.released) {
      b.released = true;
      break;
    }
  }
  reclaim();
}

void Staging::reclaim() {
  while (!live_.empty() && live_.front().released) {
    used_ -= live_.front().size;
    live_.pop_front();
  }
  if (live_.empty()) {
    head_ = 0;
    used_ = 0;
  }
}

}  // namespace vgpu::intercept
