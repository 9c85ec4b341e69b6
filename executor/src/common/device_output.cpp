#include "device_output.h"

#include <algorithm>
#include <cstring>

namespace vgpu::executor::common {

void DeviceOutput::keep(int stream, std::string_view text) {
  std::lock_guard lock(mu_);
  const int k = stream == 2 ? 1 : 0;
  std::string& out = text_[k];
  const size_t room = kMaxBytes - out.size();
  out.append(text.substr(0, room));
  dropped_[k] += text.size() > room ? text.size() - room : 0;
}

void DeviceOutput::drop(int stream, uint64_t bytes) {
  std::lock_guard lock(mu_);
  dropped_[stream == 2 ? 1 : 0] += bytes;
}

void DeviceOutput::take(int stream, std::span<uint8_t> dst, uint64_t* bytes, uint64_t* dropped) {
  std::lock_guard lock(mu_);
  const int k = stream == 2 ? 1 : 0;
  const size_t n = std::min(dst.size(), text_[k].size());
  std::memcpy(dst.data(), text_[k].data(), n);
  text_[k].erase(0, n);
  *bytes = n;
  *dropped = dropped_[k];
  dropped_[k] = 0;
}

}  // namespace vgpu::executor::common
