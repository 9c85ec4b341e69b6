// CUDA arrays, mipmapped arrays and their one-dimensional copies (the 2D and
// 3D ones are in copy_2d.cpp). See arrays.h for the layout.
#include "arrays.h"

#include <algorithm>
#include <bit>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "context_objects.h"
#include "driver_state.h"
#include "memory_ops.h"

using namespace vgpu;
using namespace vgpu::driver;
using executor::TextureDesc;

namespace vgpu::driver::arrays {

namespace {

struct Mipmapped {
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  unsigned levels = 0;
  uint64_t dptr = 0;
  std::vector<std::unique_ptr<Array>> level_arrays;
};

// Leaked: the runtime frees arrays from its exit handlers.
struct Registry {
  std::mutex mu;
  std::unordered_map<const void*, std::unique_ptr<Array>> arrays;  // created ones
  std::unordered_map<const void*, Array*> live;                    // and mip levels
  std::unordered_map<const void*, std::unique_ptr<Mipmapped>> mipmapped;
};
Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

TextureDesc layout_of(const CUDA_ARRAY3D_DESCRIPTOR& a, TextureDesc::Resource resource) {
  TextureDesc d;
  d.resource = resource;
  d.width = a.Width;
  d.height = a.Height;
  d.depth = a.Depth;
  d.format = static_cast<TextureDesc::Format>(a.Format);
  d.channels = a.NumChannels;
  d.array_flags = a.Flags;
  return d;
}

// What cuArray3DCreate and cuMipmappedArrayCreate accept: CUDA's classic
// formats and flags; the rest refused by name.
CUresult check_descriptor(const CUDA_ARRAY3D_DESCRIPTOR& a, const TextureDesc& d) {
  constexpr unsigned kImplemented = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST |
                                    CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_TEXTURE_GATHER;
  if (a.Flags & CUDA_ARRAY3D_SPARSE) return refuse("sparse CUDA arrays");
  if (a.Flags & CUDA_ARRAY3D_DEFERRED_MAPPING) return refuse("CUDA arrays with deferred mapping");
  if (a.Flags & ~kImplemented) return refuse("CUDA arrays with depth-texture or color-attachment flags");
  if (a.NumChannels != 1 && a.NumChannels != 2 && a.NumChannels != 4) return CUDA_ERROR_INVALID_VALUE;
  if (executor::element_bytes(d) == 0)
    return refuse("CUDA arrays of this format (8-, 16- and 32-bit integers, half and float are supported)");
  std::string why;
  return executor::texture_check(d, &why) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

unsigned max_levels(const CUDA_ARRAY3D_DESCRIPTOR& a) {
  const bool keeps_depth = a.Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
  const size_t largest = std::max({a.Width, a.Height, keeps_depth ? size_t{0} : a.Depth, size_t{1}});
  return 1 + static_cast<unsigned>(std::bit_width(largest) - 1);
}

CUresult create_array(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* a) {
  if (!out || !a) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  const TextureDesc d = layout_of(*a, TextureDesc::Resource::kArray);
  if (CUresult r = check_descriptor(*a, d); r != CUDA_SUCCESS) return r;
  auto array = std::make_unique<Array>();
  array->desc = *a;
  array->bytes = executor::resource_bytes(d);
  if (CUresult r = ops::device_alloc(array->bytes, &array->dptr); r != CUDA_SUCCESS) return r;
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  Array* p = array.get();
  reg.live[p] = p;
  reg.arrays[p] = std::move(array);
  *out = reinterpret_cast<CUarray>(p);
  owned::add(owned::Kind::kArray, p);
  return CUDA_SUCCESS;
}

Mipmapped* find_mipmapped(CUmipmappedArray handle) {
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  auto it = reg.mipmapped.find(handle);
  return it == reg.mipmapped.end() ? nullptr : it->second.get();
}

// One side of a 1D copy: host or device memory at `base`, or an array's
// bytes from `offset` as CUDA numbers them (rows back to back, without the
// padding between them).
struct Side1D {
  const Array* array = nullptr;
  uint64_t base = 0;
  size_t offset = 0;
  // The address of byte i, and how many bytes from there are contiguous.
  uint64_t at(size_t i, size_t* run) const {
    if (!array) {
      *run = SIZE_MAX;
      return base + i;
    }
    const size_t row = array->row_bytes(), pitch = array->pitch(), l = offset + i;
    *run = row == pitch ? SIZE_MAX : row - l % row;
    return array->dptr + l / row * pitch + l % row;
  }
};

// An array's side of a 1D copy of n bytes from `offset`; null if the range
// is not inside the array.
bool array_side(CUarray handle, size_t offset, size_t n, Side1D* out) {
  const Array* a = find(handle);
  if (!a || offset > a->row_bytes() * a->rows() * a->slices() ||
      n > a->row_bytes() * a->rows() * a->slices() - offset)
    return false;
  out->array = a;
  out->offset = offset;
  return true;
}

// Copies n bytes as pieces contiguous on both sides; `copy(dst, src, len,
// last)` moves one.
template <class Copy>
CUresult copy_1d(const Side1D& dst, const Side1D& src, size_t n, Copy copy) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  for (size_t i = 0; i < n;) {
    size_t dst_run = 0, src_run = 0;
    const uint64_t d = dst.at(i, &dst_run), s = src.at(i, &src_run);
    const size_t len = std::min({n - i, dst_run, src_run});
    if (CUresult r = copy(d, s, len, i + len == n); r != CUDA_SUCCESS) return r;
    i += len;
  }
  return CUDA_SUCCESS;
}

CUresult to_array(CUarray dst, size_t offset, uint64_t src, size_t n, bool from_host, CUstream stream, bool sync) {
  Side1D d, s{nullptr, src, 0};
  if (!array_side(dst, offset, n, &d)) return CUDA_ERROR_INVALID_VALUE;
  return copy_1d(d, s, n, [&](uint64_t to, uint64_t from, size_t len, bool last) {
    return from_host ? ops::htod(to, reinterpret_cast<const void*>(from), len, stream, sync && last)
                     : ops::dtod(to, from, len, stream, sync && last);
  });
}

CUresult from_array(uint64_t dst, CUarray src, size_t offset, size_t n, bool to_host, CUstream stream, bool sync) {
  Side1D d{nullptr, dst, 0}, s;
  if (!array_side(src, offset, n, &s)) return CUDA_ERROR_INVALID_VALUE;
  return copy_1d(d, s, n, [&](uint64_t to, uint64_t from, size_t len, bool last) {
    return to_host ? ops::dtoh(reinterpret_cast<void*>(to), from, len, stream, sync && last)
                   : ops::dtod(to, from, len, stream, sync && last);
  });
}

}  // namespace

size_t Array::row_bytes() const {
  return desc.Width * executor::element_bytes(layout_of(desc, TextureDesc::Resource::kArray));
}
size_t Array::pitch() const { return executor::row_pitch(layout_of(desc, TextureDesc::Resource::kArray)); }
size_t Array::rows() const { return std::max<size_t>(desc.Height, 1); }
size_t Array::slices() const { return std::max<size_t>(desc.Depth, 1); }

Array* find(CUarray handle) {
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  auto it = reg.live.find(handle);
  return it == reg.live.end() ? nullptr : it->second;
}

CUresult describe(CUarray handle, TextureDesc* out) {
  const Array* a = find(handle);
  if (!a) return CUDA_ERROR_INVALID_HANDLE;
  *out = layout_of(a->desc, TextureDesc::Resource::kArray);
  out->base = a->dptr;
  return CUDA_SUCCESS;
}

CUresult describe(CUmipmappedArray handle, TextureDesc* out) {
  const Mipmapped* m = find_mipmapped(handle);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  *out = layout_of(m->desc, TextureDesc::Resource::kMipmapped);
  out->levels = m->levels;
  out->base = m->dptr;
  return CUDA_SUCCESS;
}

}  // namespace vgpu::driver::arrays

using namespace vgpu::driver::arrays;

extern "C" {

CUresult cuArray3DCreate_v2(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* a) { return create_array(out, a); }

CUresult cuArrayCreate_v2(CUarray* out, const CUDA_ARRAY_DESCRIPTOR* a) {
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR d{};
  d.Width = a->Width;
  d.Height = a->Height;
  d.Format = a->Format;
  d.NumChannels = a->NumChannels;
  return create_array(out, &d);
}

CUresult cuArrayDestroy(CUarray handle) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  Array* a = find(handle);
  if (!a || a->level) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = ops::device_free(a->dptr); r != CUDA_SUCCESS) return r;
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  reg.live.erase(handle);
  reg.arrays.erase(handle);
  owned::remove(owned::Kind::kArray, handle);
  return CUDA_SUCCESS;
}

CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* out, CUarray handle) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  const Array* a = find(handle);
  if (!a) return CUDA_ERROR_INVALID_HANDLE;
  *out = a->desc;
  return CUDA_SUCCESS;
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* out, CUarray handle) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  const Array* a = find(handle);
  if (!a) return CUDA_ERROR_INVALID_HANDLE;
  out->Width = a->desc.Width;
  out->Height = a->desc.Height;
  out->Format = a->desc.Format;
  out->NumChannels = a->desc.NumChannels;
  return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray* out, const CUDA_ARRAY3D_DESCRIPTOR* a, unsigned levels) {
  if (!out || !a || levels == 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  TextureDesc d = layout_of(*a, TextureDesc::Resource::kMipmapped);
  d.levels = std::min(levels, max_levels(*a));  // CUDA clamps the count, too
  if (CUresult r = check_descriptor(*a, d); r != CUDA_SUCCESS) return r;
  auto m = std::make_unique<Mipmapped>();
  m->desc = *a;
  m->levels = d.levels;
  if (CUresult r = ops::device_alloc(executor::resource_bytes(d), &m->dptr); r != CUDA_SUCCESS) return r;
  const bool keeps_depth = a->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
  auto shrink = [](size_t v, unsigned i) { return v == 0 ? 0 : std::max<size_t>(1, v >> i); };
  for (unsigned i = 0; i < m->levels; ++i) {
    auto level = std::make_unique<Array>();
    level->desc = *a;
    level->desc.Width = shrink(a->Width, i);
    level->desc.Height = shrink(a->Height, i);
    level->desc.Depth = keeps_depth ? a->Depth : shrink(a->Depth, i);
    level->dptr = m->dptr + executor::level_offset(d, i);
    level->bytes = executor::level_bytes(d, i);
    level->level = true;
    m->level_arrays.push_back(std::move(level));
  }
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  for (auto& level : m->level_arrays) reg.live[level.get()] = level.get();
  Mipmapped* p = m.get();
  reg.mipmapped[p] = std::move(m);
  *out = reinterpret_cast<CUmipmappedArray>(p);
  owned::add(owned::Kind::kMipmappedArray, p);
  return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayGetLevel(CUarray* out, CUmipmappedArray handle, unsigned level) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  Mipmapped* m = find_mipmapped(handle);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  if (level >= m->levels) return CUDA_ERROR_INVALID_VALUE;
  *out = reinterpret_cast<CUarray>(m->level_arrays[level].get());
  return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray handle) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  Mipmapped* m = find_mipmapped(handle);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = ops::device_free(m->dptr); r != CUDA_SUCCESS) return r;
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  for (auto& level : m->level_arrays) reg.live.erase(level.get());
  reg.mipmapped.erase(handle);
  owned::remove(owned::Kind::kMipmappedArray, handle);
  return CUDA_SUCCESS;
}

// One-dimensional copies: an array's bytes as CUDA numbers them, from an offset.
CUresult cuMemcpyHtoA_v2(CUarray dst, size_t offset, const void* src, size_t n) {
  return to_array(dst, offset, reinterpret_cast<uint64_t>(src), n, true, nullptr, true);
}
CUresult cuMemcpyHtoAAsync_v2(CUarray dst, size_t offset, const void* src, size_t n, CUstream s) {
  return to_array(dst, offset, reinterpret_cast<uint64_t>(src), n, true, s, false);
}
CUresult cuMemcpyAtoH_v2(void* dst, CUarray src, size_t offset, size_t n) {
  return from_array(reinterpret_cast<uint64_t>(dst), src, offset, n, true, nullptr, true);
}
CUresult cuMemcpyAtoHAsync_v2(void* dst, CUarray src, size_t offset, size_t n, CUstream s) {
  return from_array(reinterpret_cast<uint64_t>(dst), src, offset, n, true, s, false);
}
CUresult cuMemcpyDtoA_v2(CUarray dst, size_t offset, CUdeviceptr src, size_t n) {
  return to_array(dst, offset, src, n, false, nullptr, true);
}
CUresult cuMemcpyAtoD_v2(CUdeviceptr dst, CUarray src, size_t offset, size_t n) {
  return from_array(dst, src, offset, n, false, nullptr, true);
}
CUresult cuMemcpyAtoA_v2(CUarray dst, size_t dst_offset, CUarray src, size_t src_offset, size_t n) {
  Side1D d, s;
  if (!array_side(dst, dst_offset, n, &d) || !array_side(src, src_offset, n, &s)) return CUDA_ERROR_INVALID_VALUE;
  return copy_1d(d, s, n, [](uint64_t to, uint64_t from, size_t len, bool last) {
    return ops::dtod(to, from, len, nullptr, last);
  });
}

}  // extern "C"
