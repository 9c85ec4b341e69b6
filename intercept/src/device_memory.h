// The device allocations this process holds, as the host reported them: lets
// cudaMemcpyDefault tell device pointers from host pointers. The host still
// checks every pointer against its own table.
#pragma once

#include <cstdint>
#include <map>

#include "vgpu/thread_annotations.h"

namespace vgpu::intercept {

class DeviceMemory {
 public:
  static DeviceMemory& instance();
  void add(uint64_t base, uint64_t size) EXCLUDES(mu_);
  void remove(uint64_t base) EXCLUDES(mu_);
  bool contains(uint64_t ptr) const EXCLUDES(mu_);
  // The allocation holding `ptr`: its base and size. False when none does.
  bool find(uint64_t ptr, uint64_t* base, uint64_t* size) const EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::map<uint64_t, uint64_t> ranges_ GUARDED_BY(mu_);  // base -> size
};

}  // namespace vgpu::intercept
