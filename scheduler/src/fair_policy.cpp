#include "vgpu/scheduler/fair_policy.h"

#include <algorithm>

#include "eevdf_queue.h"

namespace vgpu::scheduler {

using detail::EevdfQueue;

struct FairPolicy::Group {
  uint32_t id = 0;
  uint32_t weight = 1;
  uint32_t slot = 0;  // in top_
  size_t tenants = 0;
  EevdfQueue members;
  std::vector<Tenant*> by_slot;  // members slot -> tenant

  explicit Group(Nanos slice) : members(slice) {}
};

namespace {
uint32_t clamp_weight(uint32_t w) { return std::clamp<uint32_t>(w, 1, kMaxWeight); }
}  // namespace

FairPolicy::FairPolicy(const PolicyOptions& options)
    : options_(options), top_(std::make_unique<EevdfQueue>(options.slice)) {}

FairPolicy::~FairPolicy() = default;

void FairPolicy::set_options(const PolicyOptions& options) {
  options_ = options;
  top_->set_slice(options.slice);
  for (auto& [id, g] : groups_) g->members.set_slice(options.slice);
}

FairPolicy::Tenant* FairPolicy::find(TenantId id) {
  auto it = tenants_.find(id);
  return it == tenants_.end() ? nullptr : &it->second;
}

FairPolicy::Group* FairPolicy::join_group(Tenant* t) {
  auto& slot = groups_[t->params.group];
  if (!slot) {
    slot = std::make_unique<Group>(options_.slice);
    slot->id = t->params.group;
    slot->weight = clamp_weight(t->params.group_weight);
    slot->slot = top_->add(slot->id, slot->weight);
    if (group_by_slot_.size() <= slot->slot) group_by_slot_.resize(slot->slot + 1);
    group_by_slot_[slot->slot] = slot.get();
  }
  Group* g = slot.get();
  if (const uint32_t gw = clamp_weight(t->params.group_weight); gw != g->weight) {
    g->weight = gw;  // the latest word on a group's weight wins
    top_->set_weight(g->slot, gw);
  }
  t->group = g;
  t->slot = g->members.add(t->id, clamp_weight(t->params.weight));
  if (g->by_slot.size() <= t->slot) g->by_slot.resize(t->slot + 1);
  g->by_slot[t->slot] = t;
  ++g->tenants;
  return g;
}

void FairPolicy::leave_group(Tenant* t) {
  Group* g = t->group;
  g->members.remove(t->slot);
  g->by_slot[t->slot] = nullptr;
  t->group = nullptr;
  if (--g->tenants > 0) return;
  top_->remove(g->slot);
  group_by_slot_[g->slot] = nullptr;
  groups_.erase(g->id);
}

void FairPolicy::add_tenant(TenantId tenant, const TenantParams& params, Nanos now) {
  if (find(tenant)) {
    update_tenant(tenant, params, now);
    return;
  }
  Tenant& t = tenants_[tenant];
  t.id = tenant;
  t.params = params;
  join_group(&t);
}

void FairPolicy::remove_tenant(TenantId tenant, Nanos now) {
  Tenant* t = find(tenant);
  if (!t) return;
  idle(tenant, now);
  leave_group(t);
  tenants_.erase(tenant);
}

void FairPolicy::update_tenant(TenantId tenant, const TenantParams& params, Nanos now) {
  Tenant* t = find(tenant);
  if (!t) {
    add_tenant(tenant, params, now);
    return;
  }
  if (params.group != t->params.group) {
    // Move it, carrying its lag (service owed or had in advance) along.
    const bool was_runnable = t->runnable;
    idle(tenant, now);
    const int64_t lag = t->group->members.lag(t->slot);
    leave_group(t);
    t->params = params;
    join_group(t);
    t->group->members.set_saved_lag(t->slot, lag);
    if (was_runnable) runnable(tenant, now);
    return;
  }
  t->params = params;
  t->group->members.set_weight(t->slot, clamp_weight(params.weight));
  if (const uint32_t gw = clamp_weight(params.group_weight); gw != t->group->weight) {
    t->group->weight = gw;
    top_->set_weight(t->group->slot, gw);
  }
}

// What a tenant's lag going out of (or back into) a group that stays active
// is worth to the other groups: their share of the GPU of it.
int64_t FairPolicy::other_groups_part(const Group& g, int64_t lag) const {
  const int64_t all = top_->active_weight();
  if (all <= static_cast<int64_t>(g.weight)) return 0;
  return static_cast<int64_t>(static_cast<long double>(lag) *
                              static_cast<long double>(all - g.weight) /
                              static_cast<long double>(all));
}

// A tenant's lag against its ideal share of the whole GPU is its lag inside
// its group plus its part (w / W of the group's active weight) of its group's
// lag among groups. When it leaves, it takes that whole lag with it; when it
// comes back, it brings it back. So a tenant that leaves while its group is
// ahead carries its part of the group's debt instead of leaving it to its
// group-mates, and the hierarchy holds the same lag bound as a flat queue.
// What it takes or brings is settled with everyone by share, as in one flat
// queue: the other groups' part of it through the group's lag
// (other_groups_part), its group-mates' part inside the group. (Settling all
// of it with the other groups handed them every bit of credit a student was
// forgiven on going idle: a course of students who come and go lost share.)
void FairPolicy::runnable(TenantId tenant, Nanos) {
  Tenant* t = find(tenant);
  if (!t || t->runnable) return;
  t->runnable = true;
  Group* g = t->group;
  const int64_t carried = g->members.lag(t->slot);  // saved when it left
  if (g->members.active_count() == 0) {
    top_->set_saved_lag(g->slot, carried);
    g->members.set_saved_lag(t->slot, 0);
    top_->activate(g->slot);
  } else {
    top_->add_lag(g->slot, other_groups_part(*g, carried));
    const auto part = static_cast<int64_t>(
        static_cast<long double>(top_->lag(g->slot)) * g->members.weight(t->slot) /
        static_cast<long double>(g->members.active_weight() + g->members.weight(t->slot)));
    g->members.set_saved_lag(t->slot, carried - part);
  }
  g->members.activate(t->slot);
}

void FairPolicy::idle(TenantId tenant, Nanos) {
  Tenant* t = find(tenant);
  if (!t || !t->runnable) return;
  t->runnable = false;
  Group* g = t->group;
  const int64_t group_lag = top_->lag(g->slot);
  const auto part = static_cast<int64_t>(static_cast<long double>(group_lag) *
                                         g->members.weight(t->slot) /
                                         static_cast<long double>(g->members.active_weight()));
  const int64_t whole = g->members.lag(t->slot) + part;
  g->members.deactivate(t->slot);
  g->members.set_saved_lag(t->slot, whole);
  if (g->members.active_count() == 0) {
    top_->deactivate(g->slot);
    top_->set_saved_lag(g->slot, 0);
  } else {
    top_->add_lag(g->slot, -other_groups_part(*g, whole));
  }
  if (current_ == t) current_ = nullptr;
}

Decision FairPolicy::pick(Nanos) {
  // End the previous turn at both levels: the next tenant may be in another
  // group, and the previous one's group must hear that its turn is over.
  if (current_) current_->group->members.finish_turn();
  current_ = nullptr;
  const uint32_t gslot = top_->pick();
  if (gslot == EevdfQueue::kNone) return {};
  Group* g = group_by_slot_[gslot];
  const uint32_t tslot = g->members.pick();
  if (tslot == EevdfQueue::kNone) return {};  // unreachable: an active group has an active tenant
  current_ = g->by_slot[tslot];
  return {Decision::Kind::kRun, current_->id, options_.slice, 0};
}

void FairPolicy::charge(TenantId tenant, Nanos gpu_time, Nanos) {
  Tenant* t = (current_ && current_->id == tenant) ? current_ : find(tenant);
  if (!t) return;
  t->group->members.charge(t->slot, gpu_time);
  top_->charge(t->group->slot, gpu_time);
}

bool FairPolicy::should_yield(TenantId running, Nanos) {
  if (!current_ || current_->id != running) return false;
  return top_->should_yield() || current_->group->members.should_yield();
}

int64_t FairPolicy::lag(TenantId tenant) const {
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return 0;
  return it->second.group->members.lag_ns(it->second.slot);
}

}  // namespace vgpu::scheduler
