// Texture and surface objects on the sim backend: checked here, kept in the
// context's table, and handed to its worker before the next launch
// (sim_launch.cpp), where plug-ins read them through vgpu_sim_launch's
// texture helpers.
#include "sim_backend_impl.h"

#include <spdlog/spdlog.h>

namespace vgpu::executor::sim {

Status SimBackend::texture_create(ContextId id, const TextureDesc& desc, Handle* out) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!out) return Status::kInvalidValue;
  std::string why;
  if (!texture_check(desc, &why)) {
    spdlog::debug("sim: context {}: texture refused: {}", id, why);
    return Status::kInvalidValue;
  }
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (!ok(ctx->fault)) return ctx->fault;
  if (Status s = common::check_texture_room(*ctx, desc); !ok(s)) return s;
  const Handle h = ctx->new_handle();
  ctx->textures.emplace(h, common::TextureState{desc, common::HandleState::kLive});
  ++ctx->textures_version;
  *out = h;
  return Status::kSuccess;
}

}  // namespace vgpu::executor::sim
