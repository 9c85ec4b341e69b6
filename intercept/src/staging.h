// The guest's use of its data area: a ring of staging buffers for bulk bytes
// (copies, fat binaries), below any pinned host memory (pinned_area.h). Each
// buffer is held until the host has answered the request that uses it;
// buffers may be released out of order, and space is reclaimed in order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>

namespace vgpu::intercept {

class Staging {
 public:
  explicit Staging(uint64_t capacity) : capacity_(capacity) {}

  uint64_t capacity() const { return capacity_; }
  // Moves the end of the ring (pinned memory above it grew or shrank); only
  // while no buffer is live.
  void resize(uint64_t capacity) {
    if (empty()) capacity_ = capacity;
  }
  // The piece a copy of `size` bytes moves in: about an eighth of it (at
  // least 256 KiB), so the guest fills the next piece while the host copies
  // this one, and never more than a quarter of the ring, so several fit.
  uint64_t chunk_for(uint64_t size) const {
    return std::min<uint64_t>(std::max<uint64_t>(size / 8, 256 << 10), capacity_ / 4);
  }
  // Offset of `size` contiguous bytes, or nothing until earlier buffers are released.
  std::optional<uint64_t> try_alloc(uint64_t size);
  void release(uint64_t offset);
  bool empty() const { return live_.empty(); }

 private:
  struct Buffer {
    uint64_t offset;
    uint64_t size;
    bool released;
  };
  void reclaim();

  uint64_t capacity_;
  std::deque<Buffer> live_;  // in allocation order
  uint64_t head_ = 0;        // next free offset
  uint64_t used_ = 0;        // bytes between the oldest live buffer and head_, wrap gap included
};

}  // namespace vgpu::intercept
