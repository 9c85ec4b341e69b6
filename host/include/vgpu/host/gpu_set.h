// The host's GPUs as one executor::Backend: every call of a context goes to
// the GPU that context is on, and a tenant's first context is where the
// tenant (a VM) is placed (placement.h). A VM keeps its GPU while it has
// contexts; once its last one is destroyed it is placed again, maybe
// elsewhere, with its next. Each GPU keeps its own dispatcher, which runs
// its backend directly (scheduler/dispatcher_group.h routes work by
// gpu_of); this set is what the session layer and the call handler see.
//
// Context ids are unique across the process's backends
// (executor/src/common/context_registry.h), so a context names its GPU; a
// context no GPU has is handed to the first, which refuses it as unknown.
//
// Threads: every call from any thread, as executor::Backend allows.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "vgpu/executor/backend.h"
#include "vgpu/host/placement.h"
#include "vgpu/thread_annotations.h"

namespace vgpu::host {

class GpuSet final : public executor::Backend {
 public:
  // The scheduling weight of a tenant (spread's committed weight).
  using WeightOf = std::function<double(executor::TenantId)>;

  // `gpus`: at least one, of one kind (their name and batch depth are the
  // first's).
  GpuSet(std::vector<std::unique_ptr<executor::Backend>> gpus, PlacementPolicy policy,
         WeightOf weight_of);
  ~GpuSet() override;

  size_t size() const { return gpus_.size(); }
  executor::Backend& gpu(size_t index) { return *gpus_[index]; }
  const executor::Backend& gpu(size_t index) const { return *gpus_[index]; }
  // The GPU a context is on; 0 for a context of none (see above).
  size_t gpu_of(executor::ContextId ctx) const EXCLUDES(mu_);
  // The GPU the tenant is placed on, if it has contexts.
  std::optional<size_t> gpu_of_tenant(executor::TenantId tenant) const EXCLUDES(mu_);
  // Ok when a VM with this memory cap (0: none) fits at least one GPU of
  // the set once it is empty; unavailable, naming the cap and the largest
  // GPU, when it never can.
  Result fits_some_gpu(uint64_t memory_cap) const;
  // Every GPU's load now, as placement sees it.
  std::vector<GpuLoad> loads() const EXCLUDES(mu_);

  // Called (outside the set's lock) each time a tenant that had no context
  // is placed on a GPU. Set before the first context.
  using OnPlaced = std::function<void(executor::TenantId, size_t gpu)>;
  void set_on_placed(OnPlaced on_placed) { on_placed_ = std::move(on_placed); }

  // The tenant's own policy (its course's or student's quota), over the
  // host's; none: the host's. From its next placement.
  void set_tenant_policy(executor::TenantId tenant, std::optional<PlacementPolicy> policy)
      EXCLUDES(mu_);

  // executor::Backend
  std::string_view name() const override { return gpus_[0]->name(); }
  // What the guest is told before it has a context: the first GPU's (the
  // set's GPUs are of one kind; their memory may differ).
  const executor::DeviceInfo& device() const override { return gpus_[0]->device(); }
  // The GPU the context's VM is placed on: what its programs and NVML see.
  const executor::DeviceInfo& device_of(executor::ContextId ctx) const override {
    return of(ctx).device();
  }
  bool immediate_calls_wait() const override { return gpus_[0]->immediate_calls_wait(); }
  // Places the tenant if this is its first context: kMemoryAllocation (and
  // the reason logged) when its memory cap fits no GPU.
  Status create_context(executor::TenantId tenant, executor::ContextId* out) override EXCLUDES(mu_);
  Status attach_data_area(executor::ContextId ctx, int fd, uint64_t offset,
                          std::span<uint8_t> area) override {
    return of(ctx).attach_data_area(ctx, fd, offset, area);
  }
  void destroy_context(executor::ContextId ctx) override EXCLUDES(mu_);
  // Every GPU enforces the cap: the tenant's contexts are all on one.
  void set_memory_cap(executor::TenantId tenant, uint64_t bytes) override EXCLUDES(mu_);
  // Summed over the GPUs (the peak: the largest one GPU saw).
  executor::TenantMemory tenant_memory(executor::TenantId tenant) const override;
  uint64_t context_bytes(executor::ContextId ctx) const override;
  Status mem_alloc(executor::ContextId ctx, uint64_t size, uint64_t* dptr) override;
  Status mem_info(executor::ContextId ctx, uint64_t* free, uint64_t* total) override;
  Status stream_create(executor::ContextId ctx, uint32_t flags, int32_t priority,
                       executor::Handle* out) override;
  Status stream_query(executor::ContextId ctx, executor::Handle stream) override;
  Status event_create(executor::ContextId ctx, uint32_t flags, executor::Handle* out) override;
  Status event_query(executor::ContextId ctx, executor::Handle event) override;
  Status event_elapsed(executor::ContextId ctx, executor::Handle start, executor::Handle end,
                       int64_t* ns) override;
  Status module_load(executor::ContextId ctx, std::span<const uint8_t> fatbin,
                     executor::Handle* out) override;
  Status function_get(executor::ContextId ctx, executor::Handle module, std::string_view name,
                      executor::Handle* out, executor::FunctionInfo* info) override;
  Status var_get(executor::ContextId ctx, executor::Handle module, std::string_view name,
                 uint64_t size, uint64_t* dptr) override;
  Status func_attributes(executor::ContextId ctx, executor::Handle function,
                         executor::FunctionAttributes* out) override;
  Status texture_create(executor::ContextId ctx, const executor::TextureDesc& desc,
                        executor::Handle* out) override;
  Status take_device_output(executor::ContextId ctx, int stream, std::span<uint8_t> dst,
                            uint64_t* bytes, uint64_t* dropped) override;
  Status accept(const executor::Work& work) override;
  executor::ExecResult execute(const executor::Work& work) override;
  void discard(const executor::Work& work) override;
  size_t execute_batch(std::span<const executor::Work* const> works,
                       const executor::BatchLimits& limits, executor::ExecResult* results) override;
  bool batches(const executor::WorkOp& op) const override { return gpus_[0]->batches(op); }
  uint32_t max_batch_depth() const override { return gpus_[0]->max_batch_depth(); }
  void issue_batch(executor::BatchRun& run, const executor::BatchLimits& limits,
                   executor::BatchRun* other) override;
  void finish_batch(executor::BatchRun& run) override;
  // Summed over the GPUs; a tenant appears once.
  executor::BackendStats stats() const override;

 private:
  struct ContextOn {
    size_t gpu = 0;
    executor::TenantId tenant = 0;
  };
  struct Placed {
    size_t gpu = 0;
    int contexts = 0;  // live, and being created
  };
  executor::Backend& of(executor::ContextId ctx) const { return *gpus_[gpu_of(ctx)]; }
  std::vector<GpuLoad> loads_locked() const REQUIRES_SHARED(mu_);
  // One context fewer of the tenant; it is placed anew once it has none.
  void unplace(executor::TenantId tenant) REQUIRES(mu_);

  const std::vector<std::unique_ptr<executor::Backend>> gpus_;
  const WeightOf weight_of_;
  OnPlaced on_placed_;
  mutable SharedMutex mu_;
  const PlacementPolicy policy_;  // the host's
  std::unordered_map<executor::ContextId, ContextOn> contexts_ GUARDED_BY(mu_);
  std::unordered_map<executor::TenantId, Placed> placed_ GUARDED_BY(mu_);
  std::unordered_map<executor::TenantId, uint64_t> caps_ GUARDED_BY(mu_);
  std::unordered_map<executor::TenantId, PlacementPolicy> tenant_policy_ GUARDED_BY(mu_);
};

}  // namespace vgpu::host
