#include "vgpu/host/gpu_set.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace vgpu::host {

using executor::ContextId;
using executor::TenantId;

GpuSet::GpuSet(std::vector<std::unique_ptr<executor::Backend>> gpus, PlacementPolicy policy,
               WeightOf weight_of)
    : gpus_(std::move(gpus)), weight_of_(std::move(weight_of)), policy_(policy) {}

GpuSet::~GpuSet() = default;

size_t GpuSet::gpu_of(ContextId ctx) const {
  ReaderLock lock(mu_);
  const auto it = contexts_.find(ctx);
  return it == contexts_.end() ? 0 : it->second.gpu;
}

std::optional<size_t> GpuSet::gpu_of_tenant(TenantId tenant) const {
  ReaderLock lock(mu_);
  const auto it = placed_.find(tenant);
  if (it == placed_.end()) return std::nullopt;
  return it->second.gpu;
}

Result GpuSet::fits_some_gpu(uint64_t memory_cap) const {
  uint64_t largest = 0;
  for (const auto& gpu : gpus_) largest = std::max(largest, gpu->device().total_memory);
  if (memory_cap <= largest) return {};
  return Result::unavailable("its memory cap of " + std::to_string(memory_cap >> 20) +
                             " MiB is more than any GPU of this host has (the largest: " +
                             std::to_string(largest >> 20) + " MiB)");
}

void GpuSet::set_tenant_policy(executor::TenantId tenant, std::optional<PlacementPolicy> policy) {
  WriterLock lock(mu_);
  if (policy) {
    tenant_policy_[tenant] = *policy;
  } else {
    tenant_policy_.erase(tenant);
  }
}

std::vector<GpuLoad> GpuSet::loads() const {
  ReaderLock lock(mu_);
  return loads_locked();
}

std::vector<GpuLoad> GpuSet::loads_locked() const {
  std::vector<GpuLoad> loads(gpus_.size());
  for (size_t i = 0; i < gpus_.size(); ++i) loads[i].total_memory = gpus_[i]->device().total_memory;
  for (const auto& [tenant, placed] : placed_) {
    GpuLoad& load = loads[placed.gpu];
    load.committed_weight += weight_of_ ? weight_of_(tenant) : 1.0;
    const auto cap = caps_.find(tenant);
    load.committed_memory += cap != caps_.end() && cap->second != 0
                                 ? cap->second
                                 : gpus_[placed.gpu]->tenant_memory(tenant).used;
  }
  return loads;
}

Status GpuSet::create_context(TenantId tenant, ContextId* out) {
  size_t gpu = 0;
  bool fresh = false;
  {
    WriterLock lock(mu_);
    auto it = placed_.find(tenant);
    if (it == placed_.end()) {
      const auto cap = caps_.find(tenant);
      const uint64_t memory_cap = cap == caps_.end() ? 0 : cap->second;
      const std::vector<GpuLoad> loads = loads_locked();
      const auto own = tenant_policy_.find(tenant);
      const PlacementPolicy policy = own == tenant_policy_.end() ? policy_ : own->second;
      if (Result r = choose_gpu(policy, loads, memory_cap, &gpu); !r.ok()) {
        spdlog::warn("vgpud: tenant {} refused a context: {}", tenant, r.message());
        return Status::kMemoryAllocation;
      }
      it = placed_.emplace(tenant, Placed{gpu, 0}).first;
      fresh = true;
      spdlog::info("vgpud: tenant {} placed on GPU {} ({})", tenant, gpu,
                   policy::placement_name(policy));
    }
    gpu = it->second.gpu;
    ++it->second.contexts;  // held while the context is made: the tenant stays here
  }
  if (fresh && on_placed_) on_placed_(tenant, gpu);
  ContextId id = 0;
  const Status st = gpus_[gpu]->create_context(tenant, &id);
  WriterLock lock(mu_);
  if (!ok(st)) {
    unplace(tenant);
    return st;
  }
  contexts_[id] = ContextOn{gpu, tenant};
  *out = id;
  return st;
}

void GpuSet::unplace(TenantId tenant) {
  const auto it = placed_.find(tenant);
  if (it != placed_.end() && --it->second.contexts <= 0) placed_.erase(it);
}

void GpuSet::destroy_context(ContextId ctx) {
  ContextOn on;
  {
    ReaderLock lock(mu_);
    const auto it = contexts_.find(ctx);
    if (it == contexts_.end()) return;
    on = it->second;
  }
  gpus_[on.gpu]->destroy_context(ctx);
  WriterLock lock(mu_);
  if (contexts_.erase(ctx) != 0) unplace(on.tenant);
}

void GpuSet::set_memory_cap(TenantId tenant, uint64_t bytes) {
  {
    WriterLock lock(mu_);
    caps_[tenant] = bytes;
  }
  for (const auto& gpu : gpus_) gpu->set_memory_cap(tenant, bytes);
}

executor::TenantMemory GpuSet::tenant_memory(TenantId tenant) const {
  executor::TenantMemory sum;
  for (const auto& gpu : gpus_) {
    const executor::TenantMemory m = gpu->tenant_memory(tenant);
    sum.used += m.used;
    sum.peak = std::max(sum.peak, m.peak);
    sum.cap = m.cap;
  }
  return sum;
}

uint64_t GpuSet::context_bytes(ContextId ctx) const { return of(ctx).context_bytes(ctx); }

Status GpuSet::mem_alloc(ContextId ctx, uint64_t size, uint64_t* dptr) {
  return of(ctx).mem_alloc(ctx, size, dptr);
}

Status GpuSet::mem_info(ContextId ctx, uint64_t* free, uint64_t* total) {
  return of(ctx).mem_info(ctx, free, total);
}

Status GpuSet::stream_create(ContextId ctx, uint32_t flags, int32_t priority,
                             executor::Handle* out) {
  return of(ctx).stream_create(ctx, flags, priority, out);
}

Status GpuSet::stream_query(ContextId ctx, executor::Handle stream) {
  return of(ctx).stream_query(ctx, stream);
}

Status GpuSet::event_create(ContextId ctx, uint32_t flags, executor::Handle* out) {
  return of(ctx).event_create(ctx, flags, out);
}

Status GpuSet::event_query(ContextId ctx, executor::Handle event) {
  return of(ctx).event_query(ctx, event);
}

Status GpuSet::event_elapsed(ContextId ctx, executor::Handle start, executor::Handle end,
                             int64_t* ns) {
  return of(ctx).event_elapsed(ctx, start, end, ns);
}

Status GpuSet::module_load(ContextId ctx, std::span<const uint8_t> fatbin, executor::Handle* out) {
  return of(ctx).module_load(ctx, fatbin, out);
}

Status GpuSet::function_get(ContextId ctx, executor::Handle module, std::string_view name,
                            executor::Handle* out, executor::FunctionInfo* info) {
  return of(ctx).function_get(ctx, module, name, out, info);
}

Status GpuSet::var_get(ContextId ctx, executor::Handle module, std::string_view name, uint64_t size,
                       uint64_t* dptr) {
  return of(ctx).var_get(ctx, module, name, size, dptr);
}

Status GpuSet::func_attributes(ContextId ctx, executor::Handle function,
                               executor::FunctionAttributes* out) {
  return of(ctx).func_attributes(ctx, function, out);
}

Status GpuSet::texture_create(ContextId ctx, const executor::TextureDesc& desc,
                              executor::Handle* out) {
  return of(ctx).texture_create(ctx, desc, out);
}

Status GpuSet::take_device_output(ContextId ctx, int stream, std::span<uint8_t> dst,
                                  uint64_t* bytes, uint64_t* dropped) {
  return of(ctx).take_device_output(ctx, stream, dst, bytes, dropped);
}

Status GpuSet::accept(const executor::Work& work) { return of(work.context).accept(work); }

executor::ExecResult GpuSet::execute(const executor::Work& work) {
  return of(work.context).execute(work);
}

void GpuSet::discard(const executor::Work& work) { of(work.context).discard(work); }

// A batch is of one context (Backend's contract), so of one GPU.
size_t GpuSet::execute_batch(std::span<const executor::Work* const> works,
                             const executor::BatchLimits& limits, executor::ExecResult* results) {
  return of(works.front()->context).execute_batch(works, limits, results);
}

void GpuSet::issue_batch(executor::BatchRun& run, const executor::BatchLimits& limits,
                         executor::BatchRun* other) {
  // `other` may be of another GPU: finished there first, as the contract
  // allows (before this batch is waited for).
  executor::Backend& mine = of(run.works.front()->context);
  if (other && &of(other->works.front()->context) != &mine) {
    of(other->works.front()->context).finish_batch(*other);
    other = nullptr;
  }
  mine.issue_batch(run, limits, other);
}

void GpuSet::finish_batch(executor::BatchRun& run) {
  of(run.works.front()->context).finish_batch(run);
}

executor::BackendStats GpuSet::stats() const {
  executor::BackendStats sum;
  std::unordered_map<TenantId, size_t> row;  // tenant -> index in sum.tenants
  for (const auto& gpu : gpus_) {
    executor::BackendStats s = gpu->stats();
    sum.contexts += s.contexts;
    sum.device_bytes += s.device_bytes;
    sum.staged_copy_bytes += s.staged_copy_bytes;
    sum.direct_copy_bytes += s.direct_copy_bytes;
    for (const executor::TenantHoldings& h : s.tenants) {
      const auto [it, fresh] = row.emplace(h.tenant, sum.tenants.size());
      if (fresh) {
        sum.tenants.push_back(h);
        continue;
      }
      executor::TenantHoldings& t = sum.tenants[it->second];
      t.contexts += h.contexts;
      t.allocations += h.allocations;
      t.bytes += h.bytes;
      t.streams += h.streams;
      t.events += h.events;
      t.modules += h.modules;
      t.pending += h.pending;
    }
  }
  std::sort(sum.tenants.begin(), sum.tenants.end(),
            [](const auto& a, const auto& b) { return a.tenant < b.tenant; });
  return sum;
}

}  // namespace vgpu::host
