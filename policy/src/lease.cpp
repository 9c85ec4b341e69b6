#include "vgpu/policy/lease.h"

#include <algorithm>

namespace vgpu::policy {

int64_t lease_size(const LeaseRules& rules, int64_t budget_ns, int64_t hosts) {
  const int64_t parts = std::max<int64_t>(1, rules.budget_share) * std::max<int64_t>(1, hosts);
  const int64_t size = std::clamp(budget_ns / parts, rules.min_lease_ns, rules.max_lease_ns);
  return std::min(size, std::max<int64_t>(0, budget_ns));
}

}  // namespace vgpu::policy
