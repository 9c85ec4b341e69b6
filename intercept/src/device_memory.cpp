#include "device_memory.h"

namespace vgpu::intercept {

DeviceMemory& DeviceMemory::instance() {
  static DeviceMemory* m = new DeviceMemory();
  return *m;
}

void DeviceMemory::add(uint64_t base, uint64_t size) {
  std::lock_guard lock(mu_);
  ranges_[base] = size;
}

void DeviceMemory::remove(uint64_t base) {
  std::lock_guard lock(mu_);
  ranges_.erase(base);
}

bool DeviceMemory::contains(uint64_t ptr) const {
  std::lock_guard lock(mu_);
  auto it = ranges_.upper_bound(ptr);
  if (it == ranges_.begin()) return false;
  --it;
  return ptr - it->first < it->second;
}

}  // namespace vgpu::intercept
