// The device allocations this process holds, as the host reported them: lets
// cudaMemcpyDefault tell device pointers from host pointers. The host still
// checks every pointer against its own table.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

namespace vgpu::intercept {

class DeviceMemory {
 public:
  static DeviceMemory& instance();
  void add(uint64_t base, uint64_t size);
  void remove(uint64_t base);
  bool contains(uint64_t ptr) const;
  // The allocation holding `ptr`: its base and size. False when none does.
  bool find(uint64_t ptr, uint64_t* base, uint64_t* size) const;

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, uint64_t> ranges_;  // base -> size
};

}  // namespace vgpu::intercept
