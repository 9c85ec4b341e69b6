#include "texture_lanes.h"

#include <cstring>

#include "texture_sampler.h"

namespace vgpu::executor::sim {
namespace {

using Format = TextureDesc::Format;

// The sampler's answer (d.channels floats, or elements of the format's type) as four lanes.
void widen(const TextureDesc& d, const uint8_t* raw, uint32_t out[4]) {
  const uint32_t channels = d.channels <= 4 ? d.channels : 4;
  if (returns_float(d)) {
    std::memcpy(out, raw, channels * sizeof(float));
    return;
  }
  const uint32_t bytes = format_bytes(d.format);
  const bool is_signed = d.format == Format::kInt8 || d.format == Format::kInt16 || d.format == Format::kInt32;
  for (uint32_t c = 0; c < channels && bytes > 0 && bytes <= 4; ++c) {
    uint32_t v = 0;
    std::memcpy(&v, raw + c * bytes, bytes);
    if (is_signed && bytes < 4) {
      const int shift = 32 - static_cast<int>(bytes) * 8;
      v = static_cast<uint32_t>(static_cast<int32_t>(v << shift) >> shift);
    }
    out[c] = v;
  }
}

}  // namespace

bool texture_lanes(const TextureDesc& d, const float coord[3], int layer, float lod, uint32_t out[4]) {
  alignas(16) uint8_t raw[16] = {};
  if (texture_read(d, reinterpret_cast<const uint8_t*>(d.base), coord, layer, lod, raw) != 0) return false;
  out[0] = out[1] = out[2] = out[3] = 0;
  widen(d, raw, out);
  return true;
}

bool texture_fetch_lanes(const TextureDesc& d, long long index, uint32_t out[4]) {
  alignas(16) uint8_t raw[16] = {};
  if (texture_fetch(d, reinterpret_cast<const uint8_t*>(d.base), index, raw) != 0) return false;
  out[0] = out[1] = out[2] = out[3] = 0;
  widen(d, raw, out);
  return true;
}

}  // namespace vgpu::executor::sim
