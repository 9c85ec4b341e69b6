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

CUresult host_alloc(uint64_t bytes, uint64_t* dptr) {
  Connection& c = Connection::instance();
  auto lock = c.lock();
  proto::MallocReply rep{};
  if (Status s = c.call(proto::MallocRequest{bytes}, {}, &rep); !ok(s)) return to_cu(s);
  *dptr = rep.dptr;
  return CUDA_SUCCESS;
}

CUresult host_free(uint64_t dptr) {
  Connection& c = Connection::instance();
  auto lock = c.lock();
  proto::FreeReply rep{};
  return to_cu(intercept::with_async_errors(c, c.call(proto::FreeRequest{dptr}, {}, &rep)));
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
  if (CUresult r = host_alloc(array->bytes, &array->dptr); r != CUDA_SUCCESS) return r;
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  Array* p = array.get();
  reg.live[p] = p;
  reg.arrays[p] = std::move(array);
  *out = reinterpret_cast<CUarray>(p);
  return CUDA_SUCCESS;
}

Mipmapped* find_mipmapped(CUmipmappedArray handle) {
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  auto it = reg.mipmapped.find(handle);
  return it == reg.mipmapped.end() ? nullptr : it->second.get();
}

// A 1D copy's range inside an array.
Array* range_in(CUarray handle, size_t offset, size_t bytes) {
  Array* a = find(handle);
  if (!a || offset > a->bytes || bytes > a->bytes - offset) return nullptr;
  return a;
}

}  // namespace

size_t Array::row_bytes() const {
  return desc.Width * executor::element_bytes(layout_of(desc, TextureDesc::Resource::kArray));
}
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
  if (CUresult r = host_free(a->dptr); r != CUDA_SUCCESS) return r;
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  reg.live.erase(handle);
  reg.arrays.erase(handle);
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
  if (CUresult r = host_alloc(executor::resource_bytes(d), &m->dptr); r != CUDA_SUCCESS) return r;
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
  if (CUresult r = host_free(m->dptr); r != CUDA_SUCCESS) return r;
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  for (auto& level : m->level_arrays) reg.live.erase(level.get());
  reg.mipmapped.erase(handle);
  return CUDA_SUCCESS;
}

// One-dimensional copies: an array's bytes in its layout, from an offset.
CUresult cuMemcpyHtoA_v2(CUarray dst, size_t offset, const void* src, size_t n) {
  Array* a = range_in(dst, offset, n);
  return a ? ops::htod(a->dptr + offset, src, n, nullptr, true) : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemcpyHtoAAsync_v2(CUarray dst, size_t offset, const void* src, size_t n, CUstream s) {
  Array* a = range_in(dst, offset, n);
  return a ? ops::htod(a->dptr + offset, src, n, s, false) : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemcpyAtoH_v2(void* dst, CUarray src, size_t offset, size_t n) {
  Array* a = range_in(src, offset, n);
  return a ? ops::dtoh(dst, a->dptr + offset, n, nullptr, true) : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemcpyAtoHAsync_v2(void* dst, CUarray src, size_t offset, size_t n, CUstream s) {
  Array* a = range_in(src, offset, n);
  return a ? ops::dtoh(dst, a->dptr + offset, n, s, false) : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemcpyDtoA_v2(CUarray dst, size_t offset, CUdeviceptr src, size_t n) {
  Array* a = range_in(dst, offset, n);
  return a ? ops::dtod(a->dptr + offset, src, n, nullptr, true) : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemcpyAtoD_v2(CUdeviceptr dst, CUarray src, size_t offset, size_t n) {
  Array* a = range_in(src, offset, n);
  return a ? ops::dtod(dst, a->dptr + offset, n, nullptr, true) : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemcpyAtoA_v2(CUarray dst, size_t dst_offset, CUarray src, size_t src_offset, size_t n) {
  Array* d = range_in(dst, dst_offset, n);
  Array* s = range_in(src, src_offset, n);
  return d && s ? ops::dtod(d->dptr + dst_offset, s->dptr + src_offset, n, nullptr, true)
                : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
