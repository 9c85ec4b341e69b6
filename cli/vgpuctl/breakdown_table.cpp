#include "breakdown_table.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "vgpu/policy/units.h"

namespace vgpu::ctl {
namespace {

using nlohmann::json;

constexpr double kNsPerHour = 3600e9;

std::string fixed2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Programs get hours to 1/10000 and percents to 1/100, as people get them to 1/100.
double rounded(double v, double scale) { return std::round(v * scale) / scale; }

std::string who(const json& row) {
  if (!row.value("assigned", true)) return "(unassigned)";
  return row.value("student", "") + (row.value("removed", false) ? " (removed)" : "");
}

Cell gpu_cell(const json& row, TimeUnit unit) {
  const uint64_t ns = row["gpu_ns"].get<uint64_t>();
  switch (unit) {
    case TimeUnit::kDuration:
      return {policy::format_duration(static_cast<int64_t>(ns)), ns};
    case TimeUnit::kHours:
      return {fixed2(static_cast<double>(ns) / kNsPerHour),
              rounded(static_cast<double>(ns) / kNsPerHour, 1e4)};
    case TimeUnit::kPercent: {
      // No budget (no limit, not known, or none in the period): no percent.
      const json& quota = row["quota_ns"];
      if (!quota.is_number() || quota.get<int64_t>() <= 0) return nullptr;
      const double pct =
          100.0 * static_cast<double>(ns) / static_cast<double>(quota.get<int64_t>());
      return {fixed2(pct) + "%", rounded(pct, 1e2)};
    }
  }
  return nullptr;
}

Cell quota_cell(const json& row, TimeUnit unit) {
  const json& quota = row["quota_ns"];
  if (!quota.is_number()) return nullptr;
  const int64_t ns = quota.get<int64_t>();
  return {unit == TimeUnit::kHours ? fixed2(static_cast<double>(ns) / kNsPerHour)
                                   : policy::format_duration(ns),
          ns};
}

}  // namespace

bool parse_time_unit(std::string_view text, TimeUnit* out) {
  if (text == "hours") {
    *out = TimeUnit::kHours;
  } else if (text == "percent") {
    *out = TimeUnit::kPercent;
  } else {
    return false;
  }
  return true;
}

Table breakdown_table(const json& answer, TimeUnit unit) {
  const json by = answer.value("by", json::array());
  const bool per_period = by.size() == 2;
  const bool per_course = !by.empty() && by.back() == "course";
  std::vector<Column> columns;
  if (per_period) {
    columns.push_back(text_column("PERIOD", "period"));
    columns.push_back(machine_only("start", Column::Kind::kText));
    columns.push_back(machine_only("end", Column::Kind::kText));
  }
  columns.push_back(text_column("TIME ZONE", "time_zone"));
  columns.push_back(text_column("COURSE", "course"));
  if (per_course) {
    columns.push_back(number_column("STUDENTS", "students"));
  } else {
    columns.push_back(text_column("STUDENT", "student"));
    columns.push_back(text_column("VMS", "vms"));
  }
  switch (unit) {
    case TimeUnit::kDuration:
      columns.push_back(number_column("GPU TIME", "gpu_ns"));
      break;
    case TimeUnit::kHours:
      columns.push_back(number_column("GPU HOURS", "gpu_hours"));
      columns.push_back(machine_only("gpu_ns"));
      break;
    case TimeUnit::kPercent:
      columns.push_back(number_column("% OF QUOTA", "quota_percent"));
      columns.push_back(machine_only("gpu_ns"));
      break;
  }
  columns.push_back(number_column("QUOTA", "quota_ns"));

  Table t(std::move(columns));
  for (const json& row : answer["rows"]) {
    std::vector<Cell> cells;
    if (per_period) {
      cells.emplace_back(row["period"]);
      cells.push_back(time_cell(row["start"].get<int64_t>()));
      cells.push_back(time_cell(row["end"].get<int64_t>()));
    }
    cells.emplace_back(row["time_zone"]);
    const bool assigned = row.value("assigned", true);
    if (per_course) {
      cells.push_back(assigned ? optional_cell(row.value("course", "")) : Cell("(unassigned)"));
      cells.emplace_back(row["students"]);
    } else {
      cells.push_back(optional_cell(row.value("course", "")));
      cells.emplace_back(who(row));
      const auto vms = row["vms"].get<std::vector<std::string>>();
      cells.push_back(vms.empty() ? Cell(nullptr) : names_cell(vms));
    }
    cells.push_back(gpu_cell(row, unit));
    if (unit != TimeUnit::kDuration) cells.emplace_back(row["gpu_ns"]);
    cells.push_back(quota_cell(row, unit));
    t.add(std::move(cells));
  }
  return t;
}

}  // namespace vgpu::ctl
