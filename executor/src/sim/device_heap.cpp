#include "device_heap.h"

#include <cstdlib>

namespace vgpu::executor::sim {

DeviceHeap::~DeviceHeap() {
  for (auto& [address, bytes] : blocks_) std::free(reinterpret_cast<void*>(address));
}

uint64_t DeviceHeap::allocate(uint64_t bytes) {
  used_ = true;
  if (bytes == 0 || in_use_ > capacity_ || bytes > capacity_ - in_use_) return 0;
  // glibc's calloc aligns to 16 bytes on 64-bit hosts, as CUDA's malloc does.
  void* p = std::calloc(1, static_cast<size_t>(bytes));
  if (!p) return 0;
  const auto address = reinterpret_cast<uint64_t>(p);
  blocks_.emplace(address, bytes);
  in_use_ += bytes;
  return address;
}

void DeviceHeap::release(uint64_t address) {
  used_ = true;
  auto it = blocks_.find(address);
  if (it == blocks_.end()) return;
  in_use_ -= it->second;
  std::free(reinterpret_cast<void*>(address));
  blocks_.erase(it);
}

}  // namespace vgpu::executor::sim
