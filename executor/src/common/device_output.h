// What a context's kernels printed (stream 1: device printf) or reported
// (stream 2: failed asserts) and its program has not taken yet
// (Backend::take_device_output). Bounded per stream; what does not fit is
// counted as dropped, as a full printf FIFO loses it on a GPU. Internally
// locked: the dispatcher keeps, the guest's call takes.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

namespace vgpu::executor::common {

class DeviceOutput {
 public:
  static constexpr size_t kMaxBytes = 8u << 20;  // per stream

  void keep(int stream, std::string_view text);
  // Counts bytes lost before they reached here.
  void drop(int stream, uint64_t bytes);
  // Moves up to dst.size() bytes of a stream's output into dst, oldest
  // first; *dropped is what the bound lost since the last take.
  void take(int stream, std::span<uint8_t> dst, uint64_t* bytes, uint64_t* dropped);

 private:
  std::mutex mu_;
  std::string text_[2];       // guarded by mu_
  uint64_t dropped_[2] = {};  // guarded by mu_
};

}  // namespace vgpu::executor::common
