#include "vgpu/scheduler/round_robin.h"

namespace vgpu::scheduler {

void RoundRobinPolicy::runnable(TenantId tenant, Nanos) {
  if (where_.count(tenant)) return;
  where_[tenant] = ring_.insert(ring_.end(), tenant);
}

void RoundRobinPolicy::idle(TenantId tenant, Nanos) {
  auto it = where_.find(tenant);
  if (it == where_.end()) return;
  ring_.erase(it->second);
  where_.erase(it);
}

Decision RoundRobinPolicy::pick(Nanos) {
  if (ring_.empty()) return {};
  const TenantId next = ring_.front();
  ring_.splice(ring_.end(), ring_, ring_.begin());  // its turn is over once picked
  return {Decision::Kind::kRun, next, slice_, 0};
}

}  // namespace vgpu::scheduler
