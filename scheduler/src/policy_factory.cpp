#include "vgpu/scheduler/policy_factory.h"

#include <algorithm>
#include <sstream>

#include "vgpu/scheduler/fair_policy.h"
#include "vgpu/scheduler/fixed_share_policy.h"
#include "vgpu/scheduler/round_robin.h"

namespace vgpu::scheduler {

Status check_policy(std::string_view name, const PolicyOptions& options, std::string* why) {
  if (std::find(kPolicyNames.begin(), kPolicyNames.end(), name) == kPolicyNames.end()) {
    *why = "policy must be fair, fixed-share or best-effort, not '" + std::string(name) + "'";
    return Status::kInvalidValue;
  }
  if (options.slice < kMinSlice || options.slice > kMaxSlice) {
    std::ostringstream ms;
    ms << static_cast<double>(options.slice) / 1e6;
    *why = "slice must be between 0.5 and 50 ms, not " + ms.str() + " ms";
    return Status::kInvalidValue;
  }
  return Status::kSuccess;
}

Status make_policy(std::string_view name, const PolicyOptions& options,
                   std::unique_ptr<SchedulingPolicy>* out, std::string* why) {
  if (Status s = check_policy(name, options, why); !ok(s)) return s;
  if (name == "fair") {
    *out = std::make_unique<FairPolicy>(options);
  } else if (name == "fixed-share") {
    *out = std::make_unique<FixedSharePolicy>(options);
  } else {
    *out = std::make_unique<RoundRobinPolicy>(options);
  }
  return Status::kSuccess;
}

}  // namespace vgpu::scheduler
