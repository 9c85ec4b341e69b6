#include "vgpu/executor/texture.h"

#include <algorithm>

namespace vgpu::executor {

namespace {

using Format = TextureDesc::Format;

uint64_t at_least_one(uint64_t v) { return v == 0 ? 1 : v; }

// Bounds that keep every size computation far from overflow, at or above
// what CUDA devices allow (maxTexture1DLinear 2^28, maxTexture2D 131072 x
// 65536, maxTexture3D 16384^3, 2048 layers).
constexpr uint64_t kMaxLinearElements = uint64_t{1} << 28;
constexpr uint64_t kMaxWidth = uint64_t{1} << 17;
constexpr uint64_t kMaxHeight = uint64_t{1} << 16;
constexpr uint64_t kMaxDepth = uint64_t{1} << 14;
constexpr uint64_t kMaxPitch = uint64_t{1} << 24;

}  // namespace

uint32_t format_bytes(TextureDesc::Format f) {
  switch (f) {
    case Format::kUint8: case Format::kInt8: return 1;
    case Format::kUint16: case Format::kInt16: case Format::kHalf: return 2;
    case Format::kUint32: case Format::kInt32: case Format::kFloat: return 4;
  }
  return 0;
}

uint32_t element_bytes(const TextureDesc& d) {
  if (d.channels != 1 && d.channels != 2 && d.channels != 4) return 0;
  return format_bytes(d.format) * d.channels;
}

bool returns_float(const TextureDesc& d) {
  if (d.format == Format::kHalf || d.format == Format::kFloat) return true;
  // 32-bit integers are never promoted to floats, whatever the flag says
  // (cuTexObjectCreate's documentation).
  if (d.format == Format::kUint32 || d.format == Format::kInt32) return false;
  return (d.read_flags & TextureDesc::kReadAsInteger) == 0;
}

uint64_t row_pitch(const TextureDesc& d, uint32_t level) {
  switch (d.resource) {
    case TextureDesc::Resource::kPitch2D: return d.pitch;
    case TextureDesc::Resource::kLinear: return d.width * element_bytes(d);
    case TextureDesc::Resource::kArray:
    case TextureDesc::Resource::kMipmapped: break;
  }
  const uint64_t row = std::max<uint64_t>(1, at_least_one(d.width) >> level) * element_bytes(d);
  return (row + kArrayRowAlignment - 1) / kArrayRowAlignment * kArrayRowAlignment;
}

uint64_t level_bytes(const TextureDesc& d, uint32_t level) {
  const bool keeps_depth = d.array_flags & (TextureDesc::kLayered | TextureDesc::kCubemap);
  const uint64_t h = std::max<uint64_t>(1, at_least_one(d.height) >> level);
  const uint64_t z = keeps_depth ? at_least_one(d.depth) : std::max<uint64_t>(1, at_least_one(d.depth) >> level);
  return row_pitch(d, level) * h * z;
}

uint64_t level_offset(const TextureDesc& d, uint32_t level) {
  uint64_t offset = 0;
  for (uint32_t i = 0; i < level; ++i) offset += level_bytes(d, i);
  return offset;
}

uint64_t resource_bytes(const TextureDesc& d) {
  switch (d.resource) {
    case TextureDesc::Resource::kLinear: return d.width * element_bytes(d);
    case TextureDesc::Resource::kPitch2D: return (d.height - 1) * d.pitch + d.width * element_bytes(d);
    case TextureDesc::Resource::kArray: return level_bytes(d, 0);
    case TextureDesc::Resource::kMipmapped: return level_offset(d, d.levels);
  }
  return 0;
}

bool texture_check(const TextureDesc& d, std::string* why) {
  auto no = [why](const char* reason) {
    *why = reason;
    return false;
  };
  if (d.object != TextureDesc::Object::kTexture && d.object != TextureDesc::Object::kSurface)
    return no("unknown object kind");
  if (element_bytes(d) == 0) return no("unsupported element format or channel count (1, 2 or 4 channels of 8-, 16- or 32-bit integers, half or float)");
  switch (d.resource) {
    case TextureDesc::Resource::kLinear:
      if (d.width == 0 || d.width > kMaxLinearElements) return no("linear resource size out of range");
      break;
    case TextureDesc::Resource::kPitch2D:
      if (d.width == 0 || d.height == 0 || d.width > kMaxWidth || d.height > kMaxHeight)
        return no("pitch2D size out of range");
      if (d.pitch < d.width * element_bytes(d) || d.pitch > kMaxPitch) return no("pitch2D pitch out of range");
      break;
    case TextureDesc::Resource::kArray:
    case TextureDesc::Resource::kMipmapped:
      if (d.width == 0 || d.width > kMaxWidth || d.height > kMaxHeight || d.depth > kMaxDepth)
        return no("array size out of range");
      if (d.height == 0 && d.depth != 0 && !(d.array_flags & TextureDesc::kLayered))
        return no("an array with depth needs a height (or layers)");
      if (d.array_flags & ~(TextureDesc::kLayered | TextureDesc::kSurfaceLoadStore | TextureDesc::kCubemap |
                            TextureDesc::kTextureGather))
        return no("unsupported array flags");
      if ((d.array_flags & TextureDesc::kCubemap) &&
          (d.width != d.height || d.depth == 0 || d.depth % 6 != 0 ||
           (!(d.array_flags & TextureDesc::kLayered) && d.depth != 6)))
        return no("a cubemap is square with 6 faces per layer");
      if ((d.array_flags & TextureDesc::kLayered) && d.depth == 0) return no("a layered array needs layers");
      break;
    default:
      return no("unknown resource kind");
  }
  if (d.resource == TextureDesc::Resource::kMipmapped) {
    if (d.levels == 0 || d.levels > 32) return no("mipmap level count out of range");
    if (d.object == TextureDesc::Object::kSurface) return no("a surface names one level of a mipmapped array");
  } else if (d.levels != 1) {
    return no("levels given for a resource without mipmaps");
  }
  if (d.object == TextureDesc::Object::kSurface) {
    if (d.resource != TextureDesc::Resource::kArray) return no("a surface needs a CUDA array");
    if (!(d.array_flags & TextureDesc::kSurfaceLoadStore)) return no("the array was not created for surface load/store");
    return true;
  }
  for (auto a : d.address)
    if (static_cast<uint32_t>(a) > static_cast<uint32_t>(TextureDesc::Address::kBorder))
      return no("unknown address mode");
  for (auto f : {d.filter, d.mipmap_filter})
    if (f != TextureDesc::Filter::kPoint && f != TextureDesc::Filter::kLinear) return no("unknown filter mode");
  if (d.read_flags & ~(TextureDesc::kReadAsInteger | TextureDesc::kNormalizedCoordinates | TextureDesc::kSrgb | 0x20u | 0x40u))
    return no("unknown texture flags");
  if (d.filter == TextureDesc::Filter::kLinear && !returns_float(d))
    return no("linear filtering needs a texture that returns floats");
  return true;
}

}  // namespace vgpu::executor
