// Texture and surface objects: what one reads, its layout in the caller's
// device memory, and how a read is addressed and filtered. The guest
// describes the object; the host checks that it names the caller's own
// memory (texture_check) before a backend creates it.
//
// Layouts, all in the caller's device space at `base`:
//  - kLinear:    `width` elements back to back (tex1Dfetch).
//  - kPitch2D:   `height` rows of `width` elements, `pitch` bytes apart.
//  - kArray:     a CUDA array as the guest lays it out: rows of `width`
//                elements, each row padded to a multiple of
//                kArrayRowAlignment bytes (row_pitch), `height` rows per
//                slice, `depth` slices (layers of a layered array; 6 faces
//                per layer of a cubemap). A 2D array is so also pitched
//                memory a GPU's texture unit reads (its pitch alignment is
//                32 bytes).
//  - kMipmapped: `levels` such arrays back to back, level i of
//                max(1, width >> i) x max(1, height >> i) x (layered or
//                cubemap ? depth : max(1, depth >> i)).
// A 1D array has height 0 and depth 0, a 2D array depth 0, as CUDA's array
// descriptors say (a layered 1D array: height 0, depth its layers); sizes
// below count such a dimension as 1.
//
// Trivially copyable: the sim backend hands it to its worker as bytes.
#pragma once

#include <cstdint>
#include <string>

namespace vgpu::executor {

struct TextureDesc {
  enum class Resource : uint32_t { kLinear = 0, kPitch2D = 1, kArray = 2, kMipmapped = 3 };
  enum class Object : uint32_t { kTexture = 0, kSurface = 1 };
  // Element formats, CUarray_format's values.
  enum class Format : uint32_t {
    kUint8 = 0x01, kUint16 = 0x02, kUint32 = 0x03,
    kInt8 = 0x08, kInt16 = 0x09, kInt32 = 0x0a,
    kHalf = 0x10, kFloat = 0x20,
  };
  // CUaddress_mode's and CUfilter_mode's values.
  enum class Address : uint32_t { kWrap = 0, kClamp = 1, kMirror = 2, kBorder = 3 };
  enum class Filter : uint32_t { kPoint = 0, kLinear = 1 };
  // Array flags (CUDA_ARRAY3D_*) and read flags (CU_TRSF_*), CUDA's values.
  static constexpr uint32_t kLayered = 0x01, kSurfaceLoadStore = 0x02, kCubemap = 0x04,
                            kTextureGather = 0x08;
  static constexpr uint32_t kReadAsInteger = 0x01, kNormalizedCoordinates = 0x02, kSrgb = 0x10;

  Object object = Object::kTexture;
  Resource resource = Resource::kLinear;
  uint64_t base = 0;
  uint64_t width = 0, height = 0, depth = 0;  // in elements
  uint64_t pitch = 0;                         // kPitch2D: bytes between rows
  Format format = Format::kUint8;
  uint32_t channels = 1;                      // 1, 2 or 4
  uint32_t array_flags = 0;
  uint32_t levels = 1;                        // kMipmapped
  // How a texture is read (a surface ignores these).
  Address address[3] = {Address::kClamp, Address::kClamp, Address::kClamp};
  Filter filter = Filter::kPoint;
  Filter mipmap_filter = Filter::kPoint;
  uint32_t read_flags = 0;
  float border[4] = {0, 0, 0, 0};
  float mipmap_bias = 0, min_lod = 0, max_lod = 0;
};

inline constexpr uint64_t kArrayRowAlignment = 32;

// Bytes of one channel of a format; 0 for an unknown one.
uint32_t format_bytes(TextureDesc::Format f);
// Bytes of one element (format x channels); 0 for an unknown format.
uint32_t element_bytes(const TextureDesc& d);
// True when reads return floats: float and half formats, and 8- and 16-bit
// integer formats read as normalized floats (no kReadAsInteger); 32-bit
// integers are always read as they are.
bool returns_float(const TextureDesc& d);
// Bytes from one row to the next: kPitch2D's pitch, a linear resource's
// size, an array level's padded row.
uint64_t row_pitch(const TextureDesc& d, uint32_t level = 0);
// Bytes of level `level`'s array, and where it starts, from base.
uint64_t level_bytes(const TextureDesc& d, uint32_t level);
uint64_t level_offset(const TextureDesc& d, uint32_t level);
// Bytes the resource spans from base (for kPitch2D, up to the last row's end).
uint64_t resource_bytes(const TextureDesc& d);
// Checks the description is one CUDA allows and this code implements; on
// failure says why (a message for the guest's log) and returns false. Does
// not look at memory: the backend checks [base, base + resource_bytes) is
// the caller's.
bool texture_check(const TextureDesc& d, std::string* why);

}  // namespace vgpu::executor
