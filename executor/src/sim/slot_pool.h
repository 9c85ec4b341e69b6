// Device address slots: each live context owns one, so device addresses of
// different contexts never overlap. Slots are handed out in order and reused
// oldest-freed first, so a stale pointer keeps missing for as long as possible.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>

namespace vgpu::executor::sim {

class SlotPool {
 public:
  // Slots of `slot_bytes` (plus a guard gap) between `region_base` and
  // `region_end`.
  SlotPool(uint64_t region_base, uint64_t region_end, uint64_t slot_bytes, uint64_t guard);

  uint64_t capacity() const { return count_; }
  // False when every slot is taken.
  bool acquire(uint64_t* base);
  void release(uint64_t base);

 private:
  const uint64_t region_base_;
  const uint64_t stride_;
  const uint64_t count_;
  std::mutex mu_;
  uint64_t next_ = 0;           // guarded by mu_: slots below it were handed out once
  std::deque<uint64_t> freed_;  // guarded by mu_
};

}  // namespace vgpu::executor::sim
