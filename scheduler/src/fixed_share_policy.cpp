#include "vgpu/scheduler/fixed_share_policy.h"

#include <algorithm>
#include <cmath>

#include "slot_heap.h"

namespace vgpu::scheduler {

namespace {
uint32_t clamp_weight(uint32_t w) { return std::clamp<uint32_t>(w, 1, kMaxWeight); }
uint64_t key(Nanos t) { return static_cast<uint64_t>(t); }
// A turn's budget of one nanosecond: it ends after its first command that
// takes GPU time.
constexpr Nanos kOneCommand = 1;
}  // namespace

FixedSharePolicy::FixedSharePolicy(const PolicyOptions& options)
    : options_(options), ready_(std::make_unique<detail::SlotHeap>()) {}

FixedSharePolicy::~FixedSharePolicy() = default;

void FixedSharePolicy::enter(Tenant& t, const TenantParams& params) {
  t.weight = clamp_weight(params.weight);
  t.group = params.group;
  Group& g = groups_[t.group];
  if (g.tenants++ == 0) {
    g.weight = clamp_weight(params.group_weight);
    group_weights_ += g.weight;
  } else if (const uint32_t gw = clamp_weight(params.group_weight); gw != g.weight) {
    group_weights_ = group_weights_ - g.weight + gw;  // the latest word wins
    g.weight = gw;
  }
  g.member_weights += t.weight;
}

void FixedSharePolicy::leave(Tenant& t) {
  Group& g = groups_[t.group];
  g.member_weights -= t.weight;
  if (--g.tenants == 0) {
    group_weights_ -= g.weight;
    groups_.erase(t.group);
  }
}

double FixedSharePolicy::share_of(const Tenant& t) const {
  const Group& g = groups_.at(t.group);
  return static_cast<double>(g.weight) / static_cast<double>(group_weights_) *
         static_cast<double>(t.weight) / static_cast<double>(g.member_weights);
}

double FixedSharePolicy::share(TenantId tenant) const {
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? 0.0 : share_of(it->second);
}

void FixedSharePolicy::add_tenant(TenantId tenant, const TenantParams& params, Nanos now) {
  if (tenants_.count(tenant)) {
    update_tenant(tenant, params, now);
    return;
  }
  Tenant& t = tenants_[tenant];
  t.id = tenant;
  t.next_start = now;
  if (!free_slots_.empty()) {
    t.slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    t.slot = static_cast<uint32_t>(by_slot_.size());
    by_slot_.push_back(nullptr);
  }
  by_slot_[t.slot] = &t;
  enter(t, params);
}

void FixedSharePolicy::remove_tenant(TenantId tenant, Nanos now) {
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return;
  idle(tenant, now);
  leave(it->second);
  by_slot_[it->second.slot] = nullptr;
  free_slots_.push_back(it->second.slot);
  tenants_.erase(it);
}

void FixedSharePolicy::update_tenant(TenantId tenant, const TenantParams& params, Nanos now) {
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) {
    add_tenant(tenant, params, now);
    return;
  }
  leave(it->second);
  enter(it->second, params);
}

void FixedSharePolicy::runnable(TenantId tenant, Nanos) {
  auto it = tenants_.find(tenant);
  if (it == tenants_.end() || it->second.runnable) return;
  it->second.runnable = true;
  ready_->push(it->second.slot, key(it->second.next_start));
}

void FixedSharePolicy::idle(TenantId tenant, Nanos) {
  auto it = tenants_.find(tenant);
  if (it == tenants_.end() || !it->second.runnable) return;
  it->second.runnable = false;
  ready_->erase(it->second.slot);
}

Decision FixedSharePolicy::pick(Nanos now) {
  if (ready_->empty()) return {};
  const Tenant& t = *by_slot_[ready_->top()];
  if (t.next_start > now) return {Decision::Kind::kWaitUntil, 0, 0, t.next_start};
  return {Decision::Kind::kRun, t.id, kOneCommand, 0};
}

void FixedSharePolicy::charge(TenantId tenant, Nanos gpu_time, Nanos now) {
  if (gpu_time <= 0) return;
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return;
  Tenant& t = it->second;
  // The command ran from now - gpu_time (or later, if the clock saw overhead:
  // then the tenant waits a little longer, never less).
  const Nanos start = std::max(t.next_start, now - gpu_time);
  const auto spaced = static_cast<Nanos>(std::ceil(static_cast<double>(gpu_time) / share_of(t)));
  t.next_start = start + spaced;
  if (t.runnable) ready_->rekey(t.slot, key(t.next_start));
}

}  // namespace vgpu::scheduler
