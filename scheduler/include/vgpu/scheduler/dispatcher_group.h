// A host's GPUs, one dispatcher each, as the rest of the host sees "the
// dispatcher": the fair-share and quota rules hold per GPU (each dispatcher
// runs its own turns, for the tenants whose work is there), while the quota
// gate behind them all is one, so a tenant's budget is one across GPUs.
//
// A tenant's work goes to the dispatcher of the GPU its context is on
// (`gpu_of`). With one GPU the tenant is added to its dispatcher at once;
// with several it joins a dispatcher when its first work goes there, so a
// GPU's policy knows only the tenants that use it, and it leaves every one
// it joined when it is removed. Usage is the sum over GPUs.
//
// Threads: as Dispatcher's (submit() and accepting() from the one
// submitting thread; the rest from any thread).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "vgpu/scheduler/dispatcher.h"
#include "vgpu/thread_annotations.h"

namespace vgpu::scheduler {

class DispatcherGroup {
 public:
  using GpuOf = std::function<size_t(executor::ContextId)>;

  // `dispatchers`: at least one, owned by the caller, outliving the group.
  // `gpu_of` may be empty with one dispatcher.
  DispatcherGroup(std::vector<Dispatcher*> dispatchers, GpuOf gpu_of);

  size_t size() const { return dispatchers_.size(); }
  Dispatcher& at(size_t gpu) const { return *dispatchers_[gpu]; }

  void start();
  void stop();

  // On every GPU; the first one's Result when any refuses (the same
  // settings are valid for all, so either all change or none).
  Result configure_policy(std::string_view name, const PolicyOptions& options);
  std::string policy_name() const { return dispatchers_[0]->policy_name(); }
  void set_overlap_depth(uint32_t depth);
  uint32_t overlap_depth() const { return dispatchers_[0]->overlap_depth(); }
  uint32_t effective_overlap_depth() const { return dispatchers_[0]->effective_overlap_depth(); }

  void add_tenant(TenantId tenant, const TenantParams& params) EXCLUDES(mu_);
  void update_tenant(TenantId tenant, const TenantParams& params) EXCLUDES(mu_);
  // Removed from every GPU it joined; `retired` runs once each of them has
  // retired it (at once if it joined none).
  void remove_tenant(TenantId tenant, Dispatcher::Retired retired = {}) EXCLUDES(mu_);
  std::optional<TenantParams> tenant_params(TenantId tenant) const EXCLUDES(mu_);

  // The tenant, with no context anywhere, was placed on `gpu` (its next
  // contexts go there): it leaves every other GPU's dispatcher, so their
  // policies stop counting it (a fixed share there is the others' again).
  // What it used there stays in the usage.
  void placed(TenantId tenant, size_t gpu) EXCLUDES(mu_);
  // Commands of one tenant, of one GPU (a tenant's contexts are on one).
  void submit(TenantId tenant, std::span<Command> commands) EXCLUDES(mu_);
  // False when a GPU the tenant joined has no room for more of its work.
  bool accepting(TenantId tenant) const EXCLUDES(mu_);
  void purge_context(TenantId tenant, executor::ContextId context, Dispatcher::Retired retired);
  void poke();

  TenantUsage usage(TenantId tenant) const;
  std::unordered_map<TenantId, TenantUsage> usage_all() const;

 private:
  struct Member {
    TenantParams params;
    std::vector<bool> joined;  // by GPU
  };
  size_t gpu_of(executor::ContextId context) const;

  const std::vector<Dispatcher*> dispatchers_;
  const GpuOf gpu_of_;
  mutable Mutex mu_;
  std::unordered_map<TenantId, Member> members_ GUARDED_BY(mu_);  // only with several GPUs
};

}  // namespace vgpu::scheduler
