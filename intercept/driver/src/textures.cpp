// Texture and surface objects: the guest turns CUDA's descriptors into the
// host's description (vgpu/executor/texture.h) of memory the process owns
// (an array's, or linear device memory) and how it is read; the host checks
// it and answers with the handle kernels take as their parameter. The
// descriptors are kept here for the Get* calls.
#include <bit>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "arrays.h"
#include "context_objects.h"
#include "driver_state.h"

using namespace vgpu;
using namespace vgpu::driver;
using executor::TextureDesc;

namespace {

struct ObjectInfo {
  CUDA_RESOURCE_DESC resource{};
  CUDA_TEXTURE_DESC texture{};
  CUDA_RESOURCE_VIEW_DESC view{};
  bool surface = false;
};

// Leaked: the runtime destroys objects from its exit handlers.
struct Registry {
  std::mutex mu;
  std::unordered_map<unsigned long long, ObjectInfo> objects;
};
Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

// The memory a resource descriptor names, as the host describes it.
CUresult describe_resource(const CUDA_RESOURCE_DESC& r, TextureDesc* d) {
  if (r.flags != 0) return CUDA_ERROR_INVALID_VALUE;
  switch (r.resType) {
    case CU_RESOURCE_TYPE_ARRAY:
      return arrays::describe(r.res.array.hArray, d);
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
      return arrays::describe(r.res.mipmap.hMipmappedArray, d);
    case CU_RESOURCE_TYPE_LINEAR: {
      d->resource = TextureDesc::Resource::kLinear;
      d->base = r.res.linear.devPtr;
      d->format = static_cast<TextureDesc::Format>(r.res.linear.format);
      d->channels = r.res.linear.numChannels;
      const uint32_t elem = executor::element_bytes(*d);
      if (elem == 0 || r.res.linear.sizeInBytes % elem != 0) return CUDA_ERROR_INVALID_VALUE;
      d->width = r.res.linear.sizeInBytes / elem;
      return CUDA_SUCCESS;
    }
    case CU_RESOURCE_TYPE_PITCH2D:
      d->resource = TextureDesc::Resource::kPitch2D;
      d->base = r.res.pitch2D.devPtr;
      d->format = static_cast<TextureDesc::Format>(r.res.pitch2D.format);
      d->channels = r.res.pitch2D.numChannels;
      d->width = r.res.pitch2D.width;
      d->height = r.res.pitch2D.height;
      d->pitch = r.res.pitch2D.pitchInBytes;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// A view that only restates the resource (what the runtime passes when the
// program gave none) is no view.
bool trivial_view(const CUDA_RESOURCE_VIEW_DESC* v, const TextureDesc& d) {
  if (!v) return true;
  CUDA_RESOURCE_VIEW_DESC zero{};
  if (std::memcmp(v, &zero, sizeof zero) == 0) return true;
  return v->format == CU_RES_VIEW_FORMAT_NONE && v->width == d.width && v->height == d.height &&
         v->depth == d.depth && v->firstMipmapLevel == 0 && v->firstLayer == 0 &&
         v->lastLayer == (d.depth > 0 ? d.depth - 1 : 0) &&
         (d.resource != TextureDesc::Resource::kMipmapped || v->lastMipmapLevel + 1 == d.levels);
}

CUresult create(const TextureDesc& d, const ObjectInfo& info, unsigned long long* out) {
  std::string why;
  if (!executor::texture_check(d, &why)) {
    if (executor::element_bytes(d) == 0 && (d.channels == 1 || d.channels == 2 || d.channels == 4))
      return refuse("texture and surface objects of this format (8-, 16- and 32-bit integers, half and float are supported)");
    return CUDA_ERROR_INVALID_VALUE;
  }
  proto::TextureCreateRequest req{};
  req.base = d.base;
  req.width = d.width;
  req.height = d.height;
  req.depth = d.depth;
  req.pitch = d.pitch;
  req.object = static_cast<uint32_t>(d.object);
  req.resource = static_cast<uint32_t>(d.resource);
  req.format = static_cast<uint32_t>(d.format);
  req.channels = d.channels;
  req.array_flags = d.array_flags;
  req.levels = d.levels;
  for (int i = 0; i < 3; ++i) req.address[i] = static_cast<uint32_t>(d.address[i]);
  req.filter = static_cast<uint32_t>(d.filter);
  req.mipmap_filter = static_cast<uint32_t>(d.mipmap_filter);
  req.read_flags = d.read_flags;
  for (int i = 0; i < 4; ++i) req.border[i] = std::bit_cast<uint32_t>(d.border[i]);
  req.mipmap_bias = std::bit_cast<uint32_t>(d.mipmap_bias);
  req.min_lod = std::bit_cast<uint32_t>(d.min_lod);
  req.max_lod = std::bit_cast<uint32_t>(d.max_lod);
  Connection& c = Connection::instance();
  proto::TextureCreateReply rep{};
  {
    Connection::Lock lock(c);
    const Status s = c.call(req, {}, &rep);
    if (s == Status::kNotSupported)
      return refuse("surface objects, and texture objects over 1D, 3D, layered, cubemap or mipmapped arrays, "
                    "on this host's GPU backend");
    if (!ok(s)) return to_cu(s);
  }
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  reg.objects[rep.handle] = info;
  *out = rep.handle;
  owned::add(info.surface ? owned::Kind::kSurface : owned::Kind::kTexture, rep.handle);
  return CUDA_SUCCESS;
}

CUresult destroy(unsigned long long handle, bool surface) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  Registry& reg = registry();
  {
    std::lock_guard lock(reg.mu);
    auto it = reg.objects.find(handle);
    if (it == reg.objects.end() || it->second.surface != surface) return CUDA_ERROR_INVALID_VALUE;
  }
  Connection& c = Connection::instance();
  proto::TextureDestroyReply rep{};
  Status s;
  {
    Connection::Lock lock(c);
    s = intercept::with_async_errors(c, c.call(proto::TextureDestroyRequest{handle}, {}, &rep));
  }
  if (ok(s)) {
    std::lock_guard lock(reg.mu);
    reg.objects.erase(handle);
    owned::remove(surface ? owned::Kind::kSurface : owned::Kind::kTexture, handle);
  }
  return to_cu(s);
}

const ObjectInfo* find(unsigned long long handle, bool surface) {
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  auto it = reg.objects.find(handle);
  return it == reg.objects.end() || it->second.surface != surface ? nullptr : &it->second;
}

}  // namespace

extern "C" {

CUresult cuTexObjectCreate(CUtexObject* out, const CUDA_RESOURCE_DESC* res, const CUDA_TEXTURE_DESC* tex,
                           const CUDA_RESOURCE_VIEW_DESC* view) {
  if (!out || !res || !tex) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  TextureDesc d;
  if (CUresult r = describe_resource(*res, &d); r != CUDA_SUCCESS) return r;
  if (!trivial_view(view, d)) return refuse("resource views of texture objects");
  // maxAnisotropy is accepted and unused: anisotropic filtering needs the
  // derivatives of a GPU's quads; reads filter as filterMode says.
  for (int i = 0; i < 3; ++i) d.address[i] = static_cast<TextureDesc::Address>(tex->addressMode[i]);
  d.filter = static_cast<TextureDesc::Filter>(tex->filterMode);
  d.mipmap_filter = static_cast<TextureDesc::Filter>(tex->mipmapFilterMode);
  d.read_flags = tex->flags;
  for (int i = 0; i < 4; ++i) d.border[i] = tex->borderColor[i];
  d.mipmap_bias = tex->mipmapLevelBias;
  d.min_lod = tex->minMipmapLevelClamp;
  d.max_lod = tex->maxMipmapLevelClamp;
  ObjectInfo info;
  info.resource = *res;
  info.texture = *tex;
  if (view) info.view = *view;
  return create(d, info, out);
}

CUresult cuTexObjectDestroy(CUtexObject handle) { return destroy(handle, false); }

CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* out, CUtexObject handle) {
  const ObjectInfo* o = find(handle, false);
  if (!out || !o) return CUDA_ERROR_INVALID_VALUE;
  *out = o->resource;
  return CUDA_SUCCESS;
}

CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC* out, CUtexObject handle) {
  const ObjectInfo* o = find(handle, false);
  if (!out || !o) return CUDA_ERROR_INVALID_VALUE;
  *out = o->texture;
  return CUDA_SUCCESS;
}

CUresult cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC* out, CUtexObject handle) {
  const ObjectInfo* o = find(handle, false);
  if (!out || !o) return CUDA_ERROR_INVALID_VALUE;
  *out = o->view;
  return CUDA_SUCCESS;
}

CUresult cuSurfObjectCreate(CUsurfObject* out, const CUDA_RESOURCE_DESC* res) {
  if (!out || !res) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (res->resType != CU_RESOURCE_TYPE_ARRAY) return CUDA_ERROR_INVALID_VALUE;
  TextureDesc d;
  if (CUresult r = describe_resource(*res, &d); r != CUDA_SUCCESS) return r;
  d.object = TextureDesc::Object::kSurface;
  ObjectInfo info;
  info.resource = *res;
  info.surface = true;
  return create(d, info, out);
}

CUresult cuSurfObjectDestroy(CUsurfObject handle) { return destroy(handle, true); }

CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* out, CUsurfObject handle) {
  const ObjectInfo* o = find(handle, true);
  if (!out || !o) return CUDA_ERROR_INVALID_VALUE;
  *out = o->resource;
  return CUDA_SUCCESS;
}

}  // extern "C"
