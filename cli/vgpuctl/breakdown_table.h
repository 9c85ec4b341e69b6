// `usage report --by ...`: the daemon's breakdown (policy/admin/usage_breakdown.h)
// as a Table, GPU time shown as a duration, in hours, or as a percent of the
// budget the quota gives over each row's period (--time).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "table.h"

namespace vgpu::ctl {

enum class TimeUnit : uint8_t {
  kDuration,  // "1h30m" (gpu_ns)
  kHours,     // "1.50" (gpu_hours)
  kPercent,   // "75.00%" of the row's budget (quota_percent; none without a limit)
};
// "hours", "percent"; false for anything else.
bool parse_time_unit(std::string_view text, TimeUnit* out);

Table breakdown_table(const nlohmann::json& answer, TimeUnit unit);

}  // namespace vgpu::ctl
