// Pinned host memory (cudaMallocHost, cudaHostAlloc) lives in the VM's data
// area, the memory the host reads and writes itself: a copy from or to it
// needs no staging copy on the guest side, just as a GPU reaches pinned memory
// by DMA. This is the allocator for the part of the data area it may use:
// page-aligned blocks placed from the top down (so the staging ring below
// keeps one contiguous range), neighbours merged when freed.
//
// Not thread-safe: the connection's lock guards it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace vgpu::intercept {

class PinnedArea {
 public:
  static constexpr uint64_t kPage = 4096;

  PinnedArea() = default;
  // Manages [begin, begin + size) of the data area (offsets); both page-aligned.
  PinnedArea(uint64_t begin, uint64_t size);

  uint64_t size() const { return size_; }
  uint64_t in_use() const { return in_use_; }
  // The lowest offset a live block starts at; the area's end when none is live.
  uint64_t boundary() const { return live_.empty() ? end_ : live_.begin()->first; }
  // Offset of a new block of at least `size` bytes, at the top of the highest
  // free range that holds it; nothing if none does.
  std::optional<uint64_t> allocate(uint64_t size);
  bool starts_block(uint64_t offset) const { return live_.count(offset) != 0; }
  // Frees the block that starts at `offset`; false if none does.
  bool release(uint64_t offset);
  // Whether [offset, offset + size) lies inside one live block.
  bool holds(uint64_t offset, uint64_t size) const;

 private:
  std::map<uint64_t, uint64_t> free_;  // offset -> bytes, never adjacent
  std::map<uint64_t, uint64_t> live_;  // offset -> bytes
  uint64_t end_ = 0;
  uint64_t size_ = 0;
  uint64_t in_use_ = 0;
};

}  // namespace vgpu::intercept
