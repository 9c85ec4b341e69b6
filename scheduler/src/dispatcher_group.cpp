#include "vgpu/scheduler/dispatcher_group.h"

#include <atomic>
#include <memory>

namespace vgpu::scheduler {
namespace {

void add_usage(TenantUsage& sum, const TenantUsage& u) {
  sum.gpu_ns += u.gpu_ns;
  sum.commands += u.commands;
  sum.kernels += u.kernels;
  sum.bytes_to_device += u.bytes_to_device;
  sum.bytes_from_device += u.bytes_from_device;
  sum.queued += u.queued;
}

}  // namespace

DispatcherGroup::DispatcherGroup(std::vector<Dispatcher*> dispatchers, GpuOf gpu_of)
    : dispatchers_(std::move(dispatchers)), gpu_of_(std::move(gpu_of)) {}

size_t DispatcherGroup::gpu_of(executor::ContextId context) const {
  if (dispatchers_.size() == 1 || !gpu_of_) return 0;
  const size_t gpu = gpu_of_(context);
  return gpu < dispatchers_.size() ? gpu : 0;
}

void DispatcherGroup::start() {
  for (Dispatcher* d : dispatchers_) d->start();
}

void DispatcherGroup::stop() {
  for (Dispatcher* d : dispatchers_) d->stop();
}

Result DispatcherGroup::configure_policy(std::string_view name, const PolicyOptions& options) {
  if (Result r = dispatchers_[0]->configure_policy(name, options); !r.ok()) return r;
  for (size_t i = 1; i < dispatchers_.size(); ++i) {
    if (Result r = dispatchers_[i]->configure_policy(name, options); !r.ok()) return r;
  }
  return {};
}

void DispatcherGroup::set_overlap_depth(uint32_t depth) {
  for (Dispatcher* d : dispatchers_) d->set_overlap_depth(depth);
}

void DispatcherGroup::add_tenant(TenantId tenant, const TenantParams& params) {
  if (dispatchers_.size() == 1) return dispatchers_[0]->add_tenant(tenant, params);
  MutexLock lock(mu_);
  Member& m = members_[tenant];
  m.params = params;
  m.joined.assign(dispatchers_.size(), false);
}

void DispatcherGroup::update_tenant(TenantId tenant, const TenantParams& params) {
  if (dispatchers_.size() == 1) return dispatchers_[0]->update_tenant(tenant, params);
  MutexLock lock(mu_);
  const auto it = members_.find(tenant);
  if (it == members_.end()) return;
  it->second.params = params;
  for (size_t i = 0; i < dispatchers_.size(); ++i) {
    if (it->second.joined[i]) dispatchers_[i]->update_tenant(tenant, params);
  }
}

void DispatcherGroup::remove_tenant(TenantId tenant, Dispatcher::Retired retired) {
  if (dispatchers_.size() == 1) return dispatchers_[0]->remove_tenant(tenant, std::move(retired));
  std::vector<size_t> joined;
  {
    MutexLock lock(mu_);
    const auto it = members_.find(tenant);
    if (it != members_.end()) {
      for (size_t i = 0; i < dispatchers_.size(); ++i) {
        if (it->second.joined[i]) joined.push_back(i);
      }
      members_.erase(it);
    }
  }
  if (joined.empty()) {
    if (retired) retired();
    return;
  }
  // The last dispatcher to retire the tenant runs `retired`.
  auto left = std::make_shared<std::atomic<size_t>>(joined.size());
  auto done = std::make_shared<Dispatcher::Retired>(std::move(retired));
  for (size_t i : joined) {
    dispatchers_[i]->remove_tenant(tenant, [left, done] {
      if (left->fetch_sub(1) == 1 && *done) (*done)();
    });
  }
}

std::optional<TenantParams> DispatcherGroup::tenant_params(TenantId tenant) const {
  if (dispatchers_.size() == 1) return dispatchers_[0]->tenant_params(tenant);
  MutexLock lock(mu_);
  const auto it = members_.find(tenant);
  if (it == members_.end()) return std::nullopt;
  return it->second.params;
}

void DispatcherGroup::placed(TenantId tenant, size_t gpu) {
  std::vector<size_t> left;
  {
    MutexLock lock(mu_);
    const auto it = members_.find(tenant);
    if (it == members_.end()) return;
    for (size_t i = 0; i < dispatchers_.size(); ++i) {
      if (i == gpu || !it->second.joined[i]) continue;
      it->second.joined[i] = false;
      left.push_back(i);
    }
  }
  // Nothing of its is queued there that anyone waits for: its contexts there
  // were destroyed (and purged) before it could be placed again.
  for (size_t i : left) dispatchers_[i]->remove_tenant(tenant);
}

void DispatcherGroup::submit(TenantId tenant, std::span<Command> commands) {
  if (commands.empty()) return;
  const size_t gpu = gpu_of(commands.front().work.context);
  if (dispatchers_.size() > 1) {
    MutexLock lock(mu_);
    const auto it = members_.find(tenant);
    if (it != members_.end() && !it->second.joined[gpu]) {
      dispatchers_[gpu]->add_tenant(tenant, it->second.params);
      it->second.joined[gpu] = true;
    }
  }
  dispatchers_[gpu]->submit(tenant, commands);
}

bool DispatcherGroup::accepting(TenantId tenant) const {
  if (dispatchers_.size() == 1) return dispatchers_[0]->accepting(tenant);
  MutexLock lock(mu_);
  const auto it = members_.find(tenant);
  if (it == members_.end()) return true;  // as a Dispatcher answers for a tenant it lacks
  for (size_t i = 0; i < dispatchers_.size(); ++i) {
    if (it->second.joined[i] && !dispatchers_[i]->accepting(tenant)) return false;
  }
  return true;
}

void DispatcherGroup::purge_context(TenantId tenant, executor::ContextId context,
                                    Dispatcher::Retired retired) {
  dispatchers_[gpu_of(context)]->purge_context(tenant, context, std::move(retired));
}

void DispatcherGroup::poke() {
  for (Dispatcher* d : dispatchers_) d->poke();
}

TenantUsage DispatcherGroup::usage(TenantId tenant) const {
  TenantUsage sum;
  for (Dispatcher* d : dispatchers_) add_usage(sum, d->usage(tenant));
  return sum;
}

std::unordered_map<TenantId, TenantUsage> DispatcherGroup::usage_all() const {
  if (dispatchers_.size() == 1) return dispatchers_[0]->usage_all();
  std::unordered_map<TenantId, TenantUsage> sum;
  for (Dispatcher* d : dispatchers_) {
    for (const auto& [tenant, u] : d->usage_all()) add_usage(sum[tenant], u);
  }
  return sum;
}

}  // namespace vgpu::scheduler
