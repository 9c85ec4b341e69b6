// Builds a policy by name, as configuration names it:
//   fair         weighted fair share in virtual time, course -> student (default)
//   fixed-share  each tenant capped at its share, even when the GPU is idle
//   best-effort  round robin over busy tenants, weights ignored
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>

#include "vgpu/result.h"
#include "vgpu/scheduler/policy.h"

namespace vgpu::scheduler {

inline constexpr std::string_view kDefaultPolicy = "fair";
inline constexpr std::array<std::string_view, 3> kPolicyNames = {"fair", "fixed-share",
                                                                 "best-effort"};

// Invalid argument, the message saying which value and why, for an unknown
// name or a slice outside [kMinSlice, kMaxSlice].
Result check_policy(std::string_view name, const PolicyOptions& options);
Result make_policy(std::string_view name, const PolicyOptions& options,
                   std::unique_ptr<SchedulingPolicy>* out);

}  // namespace vgpu::scheduler
