// libFuzzer target: the host's ring reader on a ring whose bytes and indices
// the guest controls entirely.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "vgpu/transport/ring.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr uint32_t kRing = 1u << 17;
  if (size < 8) return 0;
  static std::vector<uint8_t> bytes(kRing);
  std::memset(bytes.data(), 0, bytes.size());
  vgpu_ring_ctl ctl{};
  std::memcpy(&ctl.tail, data, 4);  // where the host believes it is
  std::memcpy(&ctl.head, data + 4, 4);
  // The guest's bytes start where the host will read next, wrapping at the end.
  const size_t n = std::min<size_t>(size - 8, kRing);
  for (size_t i = 0; i < n; ++i) bytes[(ctl.tail + i) & (kRing - 1)] = data[8 + i];
  vgpu::transport::RingReader reader(&ctl, bytes.data(), kRing);
  std::vector<uint8_t> out;
  for (int i = 0; i < 64; ++i) {
    const auto r = reader.read(&out);
    if (r != vgpu::transport::RingReader::Result::kMessage) break;
    if (out.size() > VGPU_MSG_MAX_SIZE || out.size() < VGPU_MSG_HEADER_SIZE) __builtin_trap();
  }
  return 0;
}
