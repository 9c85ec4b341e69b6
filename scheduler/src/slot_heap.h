// A binary min-heap of small integer slots keyed by a 64-bit time that may
// wrap around (keys compare by signed difference, as Linux compares
// vruntimes, so they stay correct for as long as live keys are within 2^63 of
// each other). It remembers where each slot sits, so any slot can be removed
// or re-keyed in O(log n). Items are stored inline (key and slot side by
// side) so a sift touches one cache line per level.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vgpu::scheduler::detail {

// a < b on a wrapping clock.
inline bool before(uint64_t a, uint64_t b) { return static_cast<int64_t>(a - b) < 0; }

class SlotHeap {
 public:
  static constexpr uint32_t kAbsent = UINT32_MAX;

  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  uint32_t top() const { return items_.front().slot; }
  uint64_t top_key() const { return items_.front().key; }
  bool contains(uint32_t slot) const { return slot < pos_.size() && pos_[slot] != kAbsent; }

  void push(uint32_t slot, uint64_t key) {
    if (slot >= pos_.size()) pos_.resize(slot + 1, kAbsent);
    items_.push_back({key, slot});
    up(static_cast<uint32_t>(items_.size() - 1));
  }

  uint32_t pop() {
    const uint32_t slot = items_.front().slot;
    erase_at(0);
    return slot;
  }

  void erase(uint32_t slot) { erase_at(pos_[slot]); }

  void rekey(uint32_t slot, uint64_t key) {
    const uint32_t i = pos_[slot];
    const uint64_t old = items_[i].key;
    items_[i].key = key;
    if (before(key, old)) {
      up(i);
    } else {
      down(i);
    }
  }

 private:
  struct Item {
    uint64_t key;
    uint32_t slot;
  };

  // Ties go to the lower slot, so the order is a pure function of the inputs.
  static bool less(const Item& a, const Item& b) {
    return a.key == b.key ? a.slot < b.slot : before(a.key, b.key);
  }

  void place(uint32_t i, const Item& item) {
    items_[i] = item;
    pos_[item.slot] = i;
  }

  void up(uint32_t i) {
    const Item item = items_[i];
    while (i > 0) {
      const uint32_t parent = (i - 1) / 2;
      if (!less(item, items_[parent])) break;
      place(i, items_[parent]);
      i = parent;
    }
    place(i, item);
  }

  void down(uint32_t i) {
    const Item item = items_[i];
    const auto n = static_cast<uint32_t>(items_.size());
    for (;;) {
      uint32_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && less(items_[child + 1], items_[child])) ++child;
      if (!less(items_[child], item)) break;
      place(i, items_[child]);
      i = child;
    }
    place(i, item);
  }

  void erase_at(uint32_t i) {
    pos_[items_[i].slot] = kAbsent;
    const Item last = items_.back();
    items_.pop_back();
    if (i == items_.size()) return;
    const Item erased = items_[i];
    place(i, last);
    if (less(last, erased)) {
      up(i);
    } else {
      down(i);
    }
  }

  std::vector<Item> items_;
  std::vector<uint32_t> pos_;  // by slot: index in items_, or kAbsent
};

}  // namespace vgpu::scheduler::detail
