// The sim backend: modules (fat binaries parsed on the host, never trusted),
// their functions and their variables.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <string>

#include "device_model.h"
#include "sim_backend_impl.h"
#include "worker_protocol.h"

namespace vgpu::executor::sim {
namespace {

constexpr uint64_t kPage = 4096;
// PTX text kept per module for the interpreter: what a large library module
// may carry, far more than a program's own.
constexpr uint64_t kMaxPtxBytes = 64ull << 20;

bool names_fit(const fatbin::Module& m) {
  for (const fatbin::Kernel& k : m.kernels) {
    if (k.name.empty() || k.name.size() > wire::kMaxNameBytes) return false;
    if (k.param_bytes > wire::kMaxParamBytes) return false;
  }
  for (const fatbin::Variable& v : m.variables) {
    if (v.name.empty() || v.name.size() > wire::kMaxNameBytes) return false;
  }
  return true;
}

}  // namespace

Status SimBackend::module_load(ContextId id, std::span<const uint8_t> bytes, Handle* out) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!out || bytes.empty()) return Status::kInvalidValue;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);  // fail fast before parsing
    if (!ok(ctx->fault)) return ctx->fault;
  }
  ModuleState module;
  const fatbin::Error err = fatbin::parse(bytes, &module.image, {config_.module_image_limit});
  if (err != fatbin::Error::kNone) {
    spdlog::warn("sim: context {}: module rejected: {}", id, fatbin::error_name(err));
    return Status::kInvalidKernelImage;
  }
  if (!names_fit(module.image)) {
    spdlog::warn("sim: context {}: module rejected: a name or parameter list is too long", id);
    return Status::kInvalidKernelImage;
  }
  // Its PTX, for the kernels no plug-in implements (the worker interprets
  // them): kept only while the tenant's host memory allows, since the module
  // works without it.
  std::string ptx;
  if (fatbin::ptx_text(bytes, std::min<uint64_t>(config_.module_image_limit, kMaxPtxBytes), &ptx) ==
          fatbin::Error::kNone &&
      host_budget_->charge(ctx->tenant, fatbin::host_bytes(module.image) + ptx.size(),
                           &module.charge)) {
    module.ptx = std::make_shared<const std::string>(std::move(ptx));
  } else if (!host_budget_->charge(ctx->tenant, fatbin::host_bytes(module.image), &module.charge)) {
    spdlog::warn("sim: context {}: module refused: the tenant's modules would hold more than "
                 "{} MiB of host memory (--tenant-host-mib)", id, host_budget_->limit() >> 20);
    return Status::kMemoryAllocation;
  }

  std::lock_guard<std::mutex> lock(ctx->mu);
  if (!ok(ctx->fault)) return ctx->fault;
  if (ctx->modules.size() >= kMaxModules) return Status::kMemoryAllocation;
  // Variables live as long as the module, like a real module's globals, so a
  // kernel finds them even if the host never asked for their address.
  for (const fatbin::Variable& v : module.image.variables) {
    if (v.size == 0 || module.variables.count(v.name)) continue;  // size unknown: var_get sizes it
    // A __managed__ variable gets pages of its own: the guest maps them at the
    // same address for the CPU (intercept/driver/src/managed_memory.h).
    uint64_t addr = 0;
    const Status st = v.managed ? ctx->alloc(ledger_, (v.size + kPage - 1) / kPage * kPage,
                                             AllocKind::kVariable, &addr, kPage)
                                : ctx->alloc(ledger_, v.size, AllocKind::kVariable, &addr);
    if (!ok(st)) {
      for (const auto& [name, a] : module.variables) ctx->free(ledger_, a);
      return st;
    }
    ctx->initialise(addr, v);
    module.variables.emplace(v.name, addr);
  }
  const Handle h = ctx->new_handle();
  ctx->modules.emplace(h, std::move(module));
  ++ctx->symbols_version;
  *out = h;
  return Status::kSuccess;
}

Status SimBackend::function_get(ContextId id, Handle module, std::string_view name, Handle* out,
                                FunctionInfo* info) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!out || !info) return Status::kInvalidValue;
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (!ok(ctx->fault)) return ctx->fault;
  auto m = ctx->modules.find(module);
  if (m == ctx->modules.end() || m->second.state != common::HandleState::kLive) return Status::kInvalidResourceHandle;
  const fatbin::Kernel* k = m->second.image.find_kernel(name);
  if (!k) return Status::kInvalidDeviceFunction;
  info->param_count = static_cast<uint32_t>(k->params.size());
  info->param_bytes = k->param_bytes;
  auto known = m->second.functions.find(name);
  if (known != m->second.functions.end()) {
    *out = known->second;
    return Status::kSuccess;
  }
  const Handle h = ctx->new_handle();
  ctx->functions.emplace(h, FunctionState{module, k->name, info->param_count, info->param_bytes,
                                            k->max_threads});
  m->second.functions.emplace(k->name, h);
  *out = h;
  return Status::kSuccess;
}

Status SimBackend::var_get(ContextId id, Handle module, std::string_view name, uint64_t size,
                           uint64_t* dptr) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!dptr) return Status::kInvalidValue;
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (!ok(ctx->fault)) return ctx->fault;
  auto m = ctx->modules.find(module);
  if (m == ctx->modules.end() || m->second.state != common::HandleState::kLive) return Status::kInvalidResourceHandle;
  const fatbin::Variable* v = m->second.image.find_variable(name);
  if (!v) return Status::kInvalidSymbol;
  if (v->size != 0 && size != 0 && size != v->size) {
    spdlog::warn("sim: context {}: variable {} registered with {} bytes, the module says {}", id,
                 v->name, size, v->size);
    return Status::kInvalidValue;
  }
  auto known = m->second.variables.find(name);
  if (known != m->second.variables.end()) {
    *dptr = known->second;
    return Status::kSuccess;
  }
  if (size == 0) return Status::kInvalidValue;  // the module does not say, nor does the caller
  uint64_t addr = 0;
  const Status st = ctx->alloc(ledger_, size, AllocKind::kVariable, &addr);
  if (!ok(st)) return st;
  ctx->initialise(addr, *v);
  m->second.variables.emplace(v->name, addr);
  ++ctx->symbols_version;
  *dptr = addr;
  return Status::kSuccess;
}

Status SimBackend::func_attributes(ContextId id, Handle function, FunctionAttributes* out) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!out) return Status::kInvalidValue;
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (!ok(ctx->fault)) return ctx->fault;
  auto f = ctx->functions.find(function);
  if (f == ctx->functions.end()) return Status::kInvalidResourceHandle;
  auto m = ctx->modules.find(f->second.module);
  if (m == ctx->modules.end()) return Status::kInvalidResourceHandle;
  *out = function_attributes(m->second.image, f->second.max_threads);
  return Status::kSuccess;
}

}  // namespace vgpu::executor::sim
