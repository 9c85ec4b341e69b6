#include "vgpu/scheduler/policy_factory.h"

#include <algorithm>
#include <sstream>

#include "vgpu/scheduler/fair_policy.h"
#include "vgpu/scheduler/fixed_share_policy.h"
#include "vgpu/scheduler/round_robin.h"

namespace vgpu::scheduler {

Result check_policy(std::string_view name, const PolicyOptions& options) {
  if (std::find(kPolicyNames.begin(), kPolicyNames.end(), name) == kPolicyNames.end()) {
    return Result::invalid_argument("policy must be fair, fixed-share or best-effort, not '" +
                                    std::string(name) + "'");
  }
  if (options.slice < kMinSlice || options.slice > kMaxSlice) {
    std::ostringstream ms;
    ms << static_cast<double>(options.slice) / 1e6;
    return Result::invalid_argument("slice must be between 0.5 and 50 ms, not " + ms.str() + " ms");
  }
  return {};
}

Result make_policy(std::string_view name, const PolicyOptions& options,
                   std::unique_ptr<SchedulingPolicy>* out) {
  if (Result r = check_policy(name, options); !r.ok()) return r;
  if (name == "fair") {
    *out = std::make_unique<FairPolicy>(options);
  } else if (name == "fixed-share") {
    *out = std::make_unique<FixedSharePolicy>(options);
  } else {
    *out = std::make_unique<RoundRobinPolicy>(options);
  }
  return {};
}

}  // namespace vgpu::scheduler
