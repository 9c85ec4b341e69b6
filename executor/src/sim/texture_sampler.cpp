#include "texture_sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace vgpu::executor::sim {

namespace {

using Address = TextureDesc::Address;
using Filter = TextureDesc::Filter;
using Format = TextureDesc::Format;
using Resource = TextureDesc::Resource;

// texture_check bounds every size, which keeps all the arithmetic below far
// from overflow; reading through an unchecked descriptor could go anywhere.
bool readable(const TextureDesc& d, const void* memory) {
  std::string why;
  return memory != nullptr && texture_check(d, &why);
}

// One level of the resource: where it starts and its size in texels, each
// dimension counted as at least 1 (a 1D array's height is 1 row).
struct Level {
  uint64_t offset = 0;
  uint64_t n[3] = {1, 1, 1};  // width, height, slices (depth, layers or faces)
  uint64_t row = 0;           // bytes between rows
};

Level level_of(const TextureDesc& d, uint32_t l) {
  Level lv;
  const uint64_t eb = element_bytes(d);
  lv.n[0] = std::max<uint64_t>(1, d.width >> l);
  lv.row = lv.n[0] * eb;
  switch (d.resource) {
    case Resource::kLinear: break;
    case Resource::kPitch2D:
      lv.n[1] = std::max<uint64_t>(1, d.height);
      lv.row = d.pitch;
      break;
    case Resource::kArray:
    case Resource::kMipmapped: {
      // Layers and cubemap faces are not reduced by mipmapping; a 3D depth is.
      const bool keeps_depth = d.array_flags & (TextureDesc::kLayered | TextureDesc::kCubemap);
      lv.n[1] = std::max<uint64_t>(1, d.height >> l);
      lv.n[2] = std::max<uint64_t>(1, keeps_depth ? d.depth : d.depth >> l);
      lv.offset = d.resource == Resource::kMipmapped ? level_offset(d, l) : 0;
      lv.row = row_pitch(d, l);
      break;
    }
  }
  return lv;
}

// Texel (x, y, s) of `lv`, or null if that is outside the level or the
// resource (only for an inconsistent descriptor: such reads give zeros).
const uint8_t* element(const TextureDesc& d, const uint8_t* memory, const Level& lv, uint64_t x,
                       uint64_t y, uint64_t s) {
  if (x >= lv.n[0] || y >= lv.n[1] || s >= lv.n[2]) return nullptr;
  const uint64_t eb = element_bytes(d);
  const uint64_t off = lv.offset + (s * lv.n[1] + y) * lv.row + x * eb;
  const uint64_t span = resource_bytes(d);
  return off <= span && span - off >= eb ? memory + off : nullptr;
}

float half_to_float(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ffu;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(man), -24);  // zero, subnormal
  else if (exp == 31) v = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else v = std::ldexp(static_cast<float>(man | 0x400u), exp - 25);  // 1.man x 2^(exp-15)
  return (h & 0x8000) ? -v : v;
}

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// One channel as the texture returns floats: integers as normalized floats.
float channel_float(Format f, const uint8_t* p) {
  switch (f) {
    case Format::kUint8: return static_cast<float>(p[0]) / 255.0f;
    case Format::kInt8: return std::max(static_cast<float>(load<int8_t>(p)) / 127.0f, -1.0f);
    case Format::kUint16: return static_cast<float>(load<uint16_t>(p)) / 65535.0f;
    case Format::kInt16: return std::max(static_cast<float>(load<int16_t>(p)) / 32767.0f, -1.0f);
    case Format::kUint32: return static_cast<float>(load<uint32_t>(p) / 4294967295.0);
    case Format::kInt32: return static_cast<float>(std::max(load<int32_t>(p) / 2147483647.0, -1.0));
    case Format::kHalf: return half_to_float(load<uint16_t>(p));
    case Format::kFloat: return load<float>(p);
  }
  return 0;
}

float srgb_to_linear(float c) {
  return c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f);
}

// A float stored as an integer element's channel, saturated (the border color
// of a texture read as integers).
template <class T>
void store_saturated(float v, uint8_t* p) {
  const double x = std::isnan(v) ? 0.0
                                 : std::clamp<double>(v, std::numeric_limits<T>::min(),
                                                      std::numeric_limits<T>::max());
  const T t = static_cast<T>(x);
  std::memcpy(p, &t, sizeof t);
}

void border_element(const TextureDesc& d, uint8_t* out) {
  const uint32_t cb = format_bytes(d.format);
  for (uint32_t c = 0; c < d.channels; ++c) {
    uint8_t* p = out + c * cb;
    switch (d.format) {
      case Format::kUint8: store_saturated<uint8_t>(d.border[c], p); break;
      case Format::kInt8: store_saturated<int8_t>(d.border[c], p); break;
      case Format::kUint16: store_saturated<uint16_t>(d.border[c], p); break;
      case Format::kInt16: store_saturated<int16_t>(d.border[c], p); break;
      case Format::kUint32: store_saturated<uint32_t>(d.border[c], p); break;
      case Format::kInt32: store_saturated<int32_t>(d.border[c], p); break;
      case Format::kHalf: case Format::kFloat: break;  // these return floats
    }
  }
}

// floor() as an index; NaN reads texel 0, and huge values stay huge without
// overflowing (every size is far below 2^40).
long long floor_index(float v) {
  if (std::isnan(v)) return 0;
  return static_cast<long long>(std::floor(std::clamp(v, -0x1p40f, 0x1p40f)));
}

// Texel index `i` of a dimension of `n` texels under `mode`; false when the
// read gives the border color.
bool address(long long i, uint64_t n, Address mode, uint64_t* out) {
  const auto nn = static_cast<long long>(n);
  switch (mode) {
    case Address::kWrap:
      i %= nn;
      if (i < 0) i += nn;
      break;
    case Address::kMirror: {
      long long m = i % (2 * nn);
      if (m < 0) m += 2 * nn;
      i = m < nn ? m : 2 * nn - 1 - m;
      break;
    }
    case Address::kBorder:
      if (i < 0 || i >= nn) return false;
      break;
    default:
      i = std::clamp(i, 0LL, nn - 1);
      break;
  }
  *out = static_cast<uint64_t>(i);
  return true;
}

// The cubemap face (0..5: +x, -x, +y, -y, +z, -z) direction `v` hits, and
// where on it, each in [0, 1]: the CUDA guide's cubemap table (OpenGL's).
// Ties go to x, then y.
uint32_t cube_face(const float v[3], float* s, float* t) {
  const float ax = std::fabs(v[0]), ay = std::fabs(v[1]), az = std::fabs(v[2]);
  uint32_t face;
  float m, sc, tc;
  if (ax >= ay && ax >= az) {
    m = ax, face = v[0] >= 0 ? 0 : 1, sc = v[0] >= 0 ? -v[2] : v[2], tc = -v[1];
  } else if (ay >= az) {
    m = ay, face = v[1] >= 0 ? 2 : 3, sc = v[0], tc = v[1] >= 0 ? v[2] : -v[2];
  } else {
    m = az, face = v[2] >= 0 ? 4 : 5, sc = v[2] >= 0 ? v[0] : -v[0], tc = -v[1];
  }
  *s = (sc / m + 1) / 2;
  *t = (tc / m + 1) / 2;
  return face;
}

// A read in texel-independent terms: which dimensions are filtered, the
// coordinates, how each is addressed, and the fixed slice (layer or face).
struct Query {
  int dims = 1;
  float c[3] = {0, 0, 0};
  bool normalized = false;
  Address mode[3] = {Address::kClamp, Address::kClamp, Address::kClamp};
  uint64_t slice = 0;
};

bool make_query(const TextureDesc& d, const float coord[3], int layer, Query* q) {
  q->normalized = d.read_flags & TextureDesc::kNormalizedCoordinates;
  for (int k = 0; k < 3; ++k) {
    // Wrap and mirror need normalized coordinates; without them, clamp.
    const bool repeats = d.address[k] == Address::kWrap || d.address[k] == Address::kMirror;
    q->mode[k] = repeats && !q->normalized ? Address::kClamp : d.address[k];
    q->c[k] = coord[k];
  }
  const uint64_t slices = std::max<uint64_t>(1, d.depth);
  if (d.resource == Resource::kPitch2D) {
    q->dims = 2;
  } else if (d.array_flags & TextureDesc::kCubemap) {
    const bool layered = d.array_flags & TextureDesc::kLayered;
    if (layered && (layer < 0 || static_cast<uint64_t>(layer) >= slices / 6)) return false;
    const uint32_t face = cube_face(coord, &q->c[0], &q->c[1]);
    q->dims = 2;
    q->normalized = true;  // face coordinates are in [0, 1] whatever the flag
    q->mode[0] = q->mode[1] = Address::kClamp;
    q->slice = (layered ? static_cast<uint64_t>(layer) * 6 : 0) + face;
  } else if (d.array_flags & TextureDesc::kLayered) {
    if (layer < 0 || static_cast<uint64_t>(layer) >= slices) return false;
    q->dims = d.height == 0 ? 1 : 2;
    q->slice = static_cast<uint64_t>(layer);
  } else {
    q->dims = d.height == 0 ? 1 : d.depth == 0 ? 2 : 3;
  }
  return true;
}

// A point-filtered read of level `lv` as the format's elements (textures read
// as integers).
void sample_element(const TextureDesc& d, const uint8_t* memory, const Level& lv, const Query& q,
                    uint8_t* out) {
  uint64_t i[3] = {0, 0, q.slice};
  for (int k = 0; k < q.dims; ++k) {
    const float c = q.normalized ? q.c[k] * static_cast<float>(lv.n[k]) : q.c[k];
    if (!address(floor_index(c), lv.n[k], q.mode[k], &i[k])) return border_element(d, out);
  }
  const uint8_t* p = element(d, memory, lv, i[0], i[1], i[2]);
  if (p) std::memcpy(out, p, element_bytes(d));
  else std::memset(out, 0, element_bytes(d));
}

// A read of level `lv` as floats: point, or linear over 2^dims texels with
// weights quantized to 8 fractional bits as the hardware does.
void sample_float(const TextureDesc& d, const uint8_t* memory, const Level& lv, const Query& q,
                  float out[4]) {
  const bool linear = d.filter == Filter::kLinear;
  const bool srgb = (d.read_flags & TextureDesc::kSrgb) && d.format == Format::kUint8;
  long long i0[3] = {0, 0, 0};
  float a[3] = {0, 0, 0};
  for (int k = 0; k < q.dims; ++k) {
    float c = q.normalized ? q.c[k] * static_cast<float>(lv.n[k]) : q.c[k];
    if (linear) c -= 0.5f;
    i0[k] = floor_index(c);
    if (linear) a[k] = std::round((c - std::floor(c)) * 256.0f) / 256.0f;
  }
  std::fill(out, out + 4, 0.0f);
  const uint32_t cb = format_bytes(d.format);
  for (int corner = 0; corner < (linear ? 1 << q.dims : 1); ++corner) {
    float w = 1;
    bool border = false;
    uint64_t i[3] = {0, 0, q.slice};
    for (int k = 0; k < q.dims; ++k) {
      const int bit = (corner >> k) & 1;
      w *= bit ? a[k] : 1 - a[k];
      if (!address(i0[k] + bit, lv.n[k], q.mode[k], &i[k])) border = true;
    }
    if (w == 0) continue;  // so an exact texel read is that texel, even inf
    float v[4] = {0, 0, 0, 0};
    if (border) {
      std::copy(d.border, d.border + 4, v);
    } else if (const uint8_t* p = element(d, memory, lv, i[0], i[1], i[2])) {
      for (uint32_t c = 0; c < d.channels; ++c) {
        v[c] = channel_float(d.format, p + c * cb);
        if (srgb && c < 3) v[c] = srgb_to_linear(v[c]);  // alpha stays linear
      }
    }
    for (int c = 0; c < 4; ++c) out[c] += w * v[c];
  }
}

// The mip level a read uses, before rounding or blending.
float level_of_detail(const TextureDesc& d, float lod) {
  float l = std::min(std::max(lod + d.mipmap_bias, d.min_lod), d.max_lod);
  if (!(l >= 0)) l = 0;  // also NaN
  return std::min(l, static_cast<float>(d.levels - 1));
}

// tex1Dfetch: an integer index into linear memory, zeros outside it.
void fetch_linear(const TextureDesc& d, const uint8_t* memory, long long index, void* out) {
  const Level lv = level_of(d, 0);
  const uint8_t* p = index >= 0 && static_cast<uint64_t>(index) < d.width
                         ? element(d, memory, lv, static_cast<uint64_t>(index), 0, 0)
                         : nullptr;
  if (!returns_float(d)) {
    if (p) std::memcpy(out, p, element_bytes(d));
    else std::memset(out, 0, element_bytes(d));
    return;
  }
  float v[4] = {0, 0, 0, 0};
  const bool srgb = (d.read_flags & TextureDesc::kSrgb) && d.format == Format::kUint8;
  for (uint32_t c = 0; p && c < d.channels; ++c) {
    v[c] = channel_float(d.format, p + c * format_bytes(d.format));
    if (srgb && c < 3) v[c] = srgb_to_linear(v[c]);
  }
  std::memcpy(out, v, d.channels * sizeof(float));
}

// Where a surface access lands: 0 and its offset; 1 for a zero-mode access
// outside the surface; -1 for a trapped or malformed one.
int surface_locate(const TextureDesc& d, const void* memory, long long x, long long y, long long z,
                   size_t size, int boundary, uint64_t* off) {
  if (!readable(d, memory)) return -1;
  if (size != 1 && size != 2 && size != 4 && size != 8 && size != 16) return -1;
  if (boundary != kBoundaryZero && boundary != kBoundaryClamp && boundary != kBoundaryTrap) return -1;
  const auto sz = static_cast<long long>(size);
  if (x % sz != 0) return -1;  // misaligned: a fault on a GPU whatever the mode
  const Level lv = level_of(d, 0);
  const auto row_bytes = static_cast<long long>(lv.n[0] * element_bytes(d));
  const long long last_x = row_bytes >= sz ? (row_bytes - sz) / sz * sz : -1;
  const auto rows = static_cast<long long>(lv.n[1]), slices = static_cast<long long>(lv.n[2]);
  if (x < 0 || x > last_x || y < 0 || y >= rows || z < 0 || z >= slices) {
    if (boundary == kBoundaryZero) return 1;
    if (boundary == kBoundaryTrap || last_x < 0) return -1;
    x = std::clamp(x, 0LL, last_x);
    y = std::clamp(y, 0LL, rows - 1);
    z = std::clamp(z, 0LL, slices - 1);
  }
  *off = lv.offset + (static_cast<uint64_t>(z) * lv.n[1] + static_cast<uint64_t>(y)) * lv.row +
         static_cast<uint64_t>(x);
  const uint64_t span = resource_bytes(d);
  return *off <= span && span - *off >= size ? 0 : -1;
}

}  // namespace

int texture_read(const TextureDesc& d, const uint8_t* memory, const float coord[3], int layer,
                 float lod, void* out) {
  if (!readable(d, memory) || !coord || !out) return -1;
  if (d.resource == Resource::kLinear) {
    // A float index truncates toward zero, as a conversion to int does.
    const float x = coord[0];
    fetch_linear(d, memory, x > -1 && x < 0x1p62f ? static_cast<long long>(x) : -1, out);
    return 0;
  }
  Query q;
  if (!make_query(d, coord, layer, &q)) return -1;
  if (!returns_float(d)) {
    // Point filtering only (texture_check), so the nearest mip level.
    const float l = d.resource == Resource::kMipmapped ? level_of_detail(d, lod) : 0;
    uint8_t v[16];
    sample_element(d, memory, level_of(d, static_cast<uint32_t>(std::floor(l + 0.5f))), q, v);
    std::memcpy(out, v, element_bytes(d));
    return 0;
  }
  float v[4];
  if (d.resource != Resource::kMipmapped) {
    sample_float(d, memory, level_of(d, 0), q, v);
  } else if (const float l = level_of_detail(d, lod); d.mipmap_filter == Filter::kPoint) {
    sample_float(d, memory, level_of(d, static_cast<uint32_t>(std::floor(l + 0.5f))), q, v);
  } else {
    // Blend the two nearest levels.
    const auto l0 = static_cast<uint32_t>(std::floor(l));
    const float f = l - static_cast<float>(l0);
    sample_float(d, memory, level_of(d, l0), q, v);
    if (f > 0) {
      float v1[4];
      sample_float(d, memory, level_of(d, std::min(l0 + 1, d.levels - 1)), q, v1);
      for (int c = 0; c < 4; ++c) v[c] = (1 - f) * v[c] + f * v1[c];
    }
  }
  std::memcpy(out, v, d.channels * sizeof(float));
  return 0;
}

int texture_fetch(const TextureDesc& d, const uint8_t* memory, long long index, void* out) {
  if (!readable(d, memory) || !out || d.resource != Resource::kLinear) return -1;
  fetch_linear(d, memory, index, out);
  return 0;
}

int surface_read(const TextureDesc& d, const uint8_t* memory, long long x_bytes, long long y,
                 long long z, void* out, size_t size, int boundary) {
  if (!out) return -1;
  uint64_t off = 0;
  const int r = surface_locate(d, memory, x_bytes, y, z, size, boundary, &off);
  if (r == 1) std::memset(out, 0, size);
  else if (r == 0) std::memcpy(out, memory + off, size);
  return r < 0 ? -1 : 0;
}

int surface_write(const TextureDesc& d, uint8_t* memory, const void* in, size_t size,
                  long long x_bytes, long long y, long long z, int boundary) {
  if (!in) return -1;
  uint64_t off = 0;
  const int r = surface_locate(d, memory, x_bytes, y, z, size, boundary, &off);
  if (r == 0) std::memcpy(memory + off, in, size);
  return r < 0 ? -1 : 0;
}

}  // namespace vgpu::executor::sim
