#include "device_memory.h"

namespace vgpu::intercept {

DeviceMemory& DeviceMemory::instance() {
  static DeviceMemory* m = new DeviceMemory();
  return *m;
}

void DeviceMemory::add(uint64_t base, uint64_t size) {
  MutexLock lock(mu_);
  ranges_[base] = size;
}

void DeviceMemory::remove(uint64_t base) {
  MutexLock lock(mu_);
  ranges_.erase(base);
}

bool DeviceMemory::contains(uint64_t ptr) const {
  uint64_t base = 0, size = 0;
  return find(ptr, &base, &size);
}

bool DeviceMemory::find(uint64_t ptr, uint64_t* base, uint64_t* size) const {
  MutexLock lock(mu_);
  auto it = ranges_.upper_bound(ptr);
  if (it == ranges_.begin()) return false;
  --it;
  if (ptr - it->first >= it->second) return false;
  *base = it->first;
  *size = it->second;
  return true;
}

}  // namespace vgpu::intercept
