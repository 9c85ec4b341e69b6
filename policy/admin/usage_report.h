// The usage report's data: per student (and per unassigned VM), usage over a
// time range against the quota, plus a time series for charts. Formatting
// (table, CSV, JSON, HTML) is vgpuctl's.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "vgpu/policy/store.h"

namespace vgpu::admin {

struct ReportFilter {
  std::string course;   // empty: every course the actor sees
  std::string student;  // empty: every student
  int64_t since = 0;
  int64_t until = 0;  // 0: now
};

// {"since", "until", "generated_at", "time_zone", "bucket_s", "rows": [...],
// "series": [{start, end, label, gpu_ns: {row: ns}}]}: the series' buckets
// and labels are on the wall clock of `time_zone` (the students' course's
// when they share one, else UTC);
// see docs/quotas.md. kNotFound for an unknown course or student,
// kPermissionDenied for a course the actor may not see, kStorage for a
// ledger that cannot be read.
vgpu::Result usage_report(policy::Store& store, const policy::Actor& by, const ReportFilter& filter,
                          int64_t now, nlohmann::json* out);

}  // namespace vgpu::admin
