// The device heap of one context on the sim backend: what `malloc`, `free`,
// `new` and `delete` in an interpreted kernel get. It lives in the worker
// (a context's own process), outlives launches as CUDA's heap does, and is
// bounded like CUDA's heap (cudaLimitMallocHeapSize, 8 MiB unless the
// program sets it): past it, malloc returns null, as on a GPU whose heap is
// full. Blocks are zeroed
// and 16-byte aligned. Only the kernels of this context can reach them; the
// host's copy calls cannot, as CUDA's cannot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace vgpu::executor::sim {

class DeviceHeap {
 public:
  static constexpr uint64_t kDefaultCapacity = 8ull << 20;

  explicit DeviceHeap(uint64_t capacity = kDefaultCapacity) : capacity_(capacity) {}
  ~DeviceHeap();
  DeviceHeap(const DeviceHeap&) = delete;
  DeviceHeap& operator=(const DeviceHeap&) = delete;

  // A block of `bytes`, or 0 when zero bytes are asked for or the heap is full.
  uint64_t allocate(uint64_t bytes);
  // Takes back a block `allocate` gave; anything else (null, a pointer inside a block, one
  // freed already) changes nothing: undefined in CUDA, harmless here.
  void release(uint64_t address);

  uint64_t in_use() const { return in_use_; }
  // Whether a kernel has called malloc or free: CUDA fixes the heap's size then.
  bool used() const { return used_; }
  // A new size; blocks already given keep theirs.
  void set_capacity(uint64_t bytes) { capacity_ = bytes; }

 private:
  uint64_t capacity_;
  uint64_t in_use_ = 0;
  bool used_ = false;
  std::unordered_map<uint64_t, uint64_t> blocks_;  // address -> bytes
};

}  // namespace vgpu::executor::sim
