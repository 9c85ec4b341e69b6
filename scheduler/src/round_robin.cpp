#include "vgpu/scheduler/round_robin.h"

#include <algorithm>

namespace vgpu::scheduler {

void RoundRobinPolicy::runnable(TenantId tenant, Nanos) {
  if (runnable_.insert(tenant).second) ring_.push_back(tenant);
}

void RoundRobinPolicy::idle(TenantId tenant, Nanos) {
  if (runnable_.erase(tenant)) ring_.erase(std::find(ring_.begin(), ring_.end(), tenant));
}

Decision RoundRobinPolicy::pick(Nanos) {
  if (ring_.empty()) return {};
  const TenantId next = ring_.front();
  ring_.pop_front();
  ring_.push_back(next);  // its turn is over once picked
  return {Decision::Kind::kRun, next, slice_, 0};
}

}  // namespace vgpu::scheduler
