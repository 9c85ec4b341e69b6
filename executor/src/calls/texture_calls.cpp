// Texture and surface objects: the guest's description becomes a
// TextureDesc the backend checks against the caller's own memory.
#include <bit>

#include "vgpu/executor/call_handler.h"

namespace vgpu::executor {

using namespace vgpu::proto;

namespace {

TextureDesc describe(const TextureCreateRequest& r) {
  TextureDesc d;
  d.object = static_cast<TextureDesc::Object>(r.object);
  d.resource = static_cast<TextureDesc::Resource>(r.resource);
  d.base = r.base;
  d.width = r.width;
  d.height = r.height;
  d.depth = r.depth;
  d.pitch = r.pitch;
  d.format = static_cast<TextureDesc::Format>(r.format);
  d.channels = r.channels;
  d.array_flags = r.array_flags;
  d.levels = r.levels;
  for (int i = 0; i < 3; ++i) d.address[i] = static_cast<TextureDesc::Address>(r.address[i]);
  d.filter = static_cast<TextureDesc::Filter>(r.filter);
  d.mipmap_filter = static_cast<TextureDesc::Filter>(r.mipmap_filter);
  d.read_flags = r.read_flags;
  for (int i = 0; i < 4; ++i) d.border[i] = std::bit_cast<float>(r.border[i]);
  d.mipmap_bias = std::bit_cast<float>(r.mipmap_bias);
  d.min_lod = std::bit_cast<float>(r.min_lod);
  d.max_lod = std::bit_cast<float>(r.max_lod);
  return d;
}

}  // namespace

Outcome CallHandler::handle(const vgpu_msg_header&, const TextureCreateRequest& r,
                            std::span<const uint8_t>) {
  // Enum fields are copied as numbers; texture_check() in the backend
  // refuses any value outside the enums.
  TextureCreateReply rep{};
  if (Status s = backend_->texture_create(caller_->context, describe(r), &rep.handle); !ok(s))
    return Outcome::failure(s);
  return Outcome::replying(rep);
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const TextureDestroyRequest& r,
                            std::span<const uint8_t>) {
  return queue(h, kDefaultStream, DestroyTexture{r.handle});
}

}  // namespace vgpu::executor
