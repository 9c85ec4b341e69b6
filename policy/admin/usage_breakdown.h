// Usage per period and per student or course, as Slurm's sreport gives it
// (`vgpuctl usage report --by day|week|month --by student|course`): one row
// for each period and student (or course) with usage in it, with the budget
// the quota gives over that period beside it. Each course's periods are on
// its own wall clock (its time zone; unassigned VMs: UTC). Formatting (hours,
// percent of quota, table, CSV, JSON) is vgpuctl's.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "usage_report.h"
#include "vgpu/policy/calendar.h"
#include "vgpu/policy/store.h"

namespace vgpu::admin {

enum class ReportGroup : uint8_t { kStudent, kCourse };
// "student", "course"; false for anything else.
bool parse_report_group(std::string_view text, ReportGroup* out);

struct Breakdown {
  std::optional<policy::Calendar> period;  // none: one row per student (course) for the whole span
  ReportGroup group = ReportGroup::kStudent;
};

// {"since", "until", "generated_at", "by": [...], "rows": [{"period" (null
// without a period), "start", "end", "time_zone", "course", "student",
// "assigned", "removed", "vms", "gpu_ns", "quota_ns" (null: no limit, or not
// known)}]}; see docs/quotas.md. Refused as usage_report is.
vgpu::Result usage_breakdown(policy::Store& store, const policy::Actor& by,
                             const ReportFilter& filter, const Breakdown& breakdown, int64_t now,
                             nlohmann::json* out);

}  // namespace vgpu::admin
