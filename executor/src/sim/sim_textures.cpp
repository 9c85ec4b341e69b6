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
  // The object reads (and a surface writes) only memory the context owns.
  uint64_t offset = 0;
  if (!ctx->allocations.resolve(desc.base, resource_bytes(desc), false, &offset)) {
    spdlog::debug("sim: context {}: texture over memory it does not own", id);
    return Status::kInvalidValue;
  }
  if (ctx->textures.size() >= common::kMaxTextures) return Status::kMemoryAllocation;
  const Handle h = ctx->new_handle();
  ctx->textures.emplace(h, common::TextureState{desc, false});
  ++ctx->textures_version;
  *out = h;
  return Status::kSuccess;
}

}  // namespace vgpu::executor::sim
