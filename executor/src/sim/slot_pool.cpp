#include "slot_pool.h"

namespace vgpu::executor::sim {

SlotPool::SlotPool(uint64_t region_base, uint64_t region_end, uint64_t slot_bytes, uint64_t guard)
    : region_base_(region_base),
      stride_(slot_bytes + guard),
      count_(region_end > region_base && stride_ > 0 ? (region_end - region_base) / stride_ : 0) {}

bool SlotPool::acquire(uint64_t* base) {
  std::lock_guard<std::mutex> lock(mu_);
  if (next_ < count_) {
    *base = region_base_ + next_++ * stride_;
    return true;
  }
  if (freed_.empty()) return false;
  *base = freed_.front();
  freed_.pop_front();
  return true;
}

void SlotPool::release(uint64_t base) {
  std::lock_guard<std::mutex> lock(mu_);
  freed_.push_back(base);
}

}  // namespace vgpu::executor::sim
