#include "usage_report.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "quota_json.h"
#include "vgpu/policy/time_zone.h"
#include "vgpu/policy/units.h"

namespace vgpu::admin {

using nlohmann::json;
using namespace vgpu::policy;

namespace {

struct Totals {
  uint64_t gpu_ns = 0, kernels = 0, to_device = 0, from_device = 0, peak = 0;
  std::map<std::pair<std::string, uint32_t>, uint64_t> where;  // GPU ns per host and GPU
  void add(const UsageRecord& r) {
    gpu_ns += r.gpu_ns;
    where[{r.host, r.gpu}] += r.gpu_ns;
    kernels += r.kernels;
    to_device += r.bytes_to_device;
    from_device += r.bytes_from_device;
    peak = std::max(peak, r.peak_memory);
  }
  void put(json* row) const {
    (*row)["gpu_ns"] = gpu_ns;
    (*row)["gpu_time"] = format_duration(static_cast<int64_t>(gpu_ns));
    (*row)["kernels"] = kernels;
    (*row)["bytes_to_device"] = to_device;
    (*row)["bytes_from_device"] = from_device;
    (*row)["peak_memory"] = peak;
    // Where it ran: the host ("" for usage from before hosts were recorded) and GPU.
    json at = json::array();
    for (const auto& [place, ns] : where) {
      at.push_back({{"host", place.first}, {"gpu", place.second}, {"gpu_ns", ns}});
    }
    (*row)["where"] = std::move(at);
  }
};

// Chart buckets: hours for up to three days, days up to 90, weeks beyond.
int64_t bucket_for(int64_t span) {
  if (span <= 3 * 86400) return 3600;
  if (span <= 90 * 86400) return 86400;
  return 7 * 86400;
}

}  // namespace

Result usage_report(Store& store, const Actor& by, const ReportFilter& f, int64_t now, json* out) {
  const int64_t until = f.until ? f.until : now + 1;
  std::vector<StudentRow> students;
  if (Result r = store.list_students(by, f.course, true, &students); !r.ok()) return r;
  if (!f.student.empty()) {
    std::erase_if(students, [&](const StudentRow& s) { return s.name != f.student; });
    if (students.empty()) return Result::not_found("unknown student '" + f.student + "'");
  }
  std::vector<UsageRecord> rows;
  std::vector<VmRow> vms;
  if (!store.usage_rows(f.since, until, &rows).ok() || !store.list_vms(&vms).ok()) {
    return Result::storage("cannot read the ledger");
  }
  std::unordered_map<TenantId, std::string> vm_name;
  for (const VmRow& v : vms) vm_name[v.tenant] = v.name;
  std::unordered_map<int64_t, const StudentRow*> by_id;
  for (const StudentRow& s : students) by_id[s.id] = &s;
  // Unassigned VMs only for admins looking at everything.
  const bool with_unassigned = by.role == Role::kAdmin && f.course.empty() && f.student.empty();

  std::unordered_map<int64_t, Totals> per_student;
  std::map<std::string, Totals> per_vm;  // unassigned, by VM name
  std::vector<const UsageRecord*> kept;
  for (const UsageRecord& r : rows) {
    if (r.student != 0 && by_id.count(r.student)) {
      per_student[r.student].add(r);
    } else if (r.student == 0 && with_unassigned) {
      per_vm[vm_name[r.tenant]].add(r);
    } else {
      continue;
    }
    kept.push_back(&r);
  }

  json j;
  j["since"] = f.since;
  j["until"] = until;
  j["generated_at"] = now;
  j["rows"] = json::array();
  std::unordered_map<int64_t, std::string> label;  // student id -> series label
  for (const StudentRow& s : students) {
    const bool used = per_student.count(s.id) != 0;
    if (s.removed_at && !used) continue;  // history only when it has some
    json row;
    row["student"] = s.name;
    row["course"] = s.course;
    row["assigned"] = true;
    row["removed"] = s.removed_at != 0;
    row["vms"] = s.vms;
    per_student[s.id].put(&row);
    label[s.id] = s.name;
    if (!s.removed_at) {
      // A level that cannot be read counts as nothing set.
      QuotaFields own, course;
      (void)store.get_quota(by, {QuotaTarget::Kind::kStudent, s.name}, &own);
      (void)store.get_quota(by, {QuotaTarget::Kind::kCourse, s.course}, &course);
      const Quota q = resolve_student_quota(own, course);
      row["quota"] = quota_json(q);
      const Window w = window_at(q.gpu_time, now, TimeZone::find_or_utc(s.time_zone));
      int64_t spent = 0;  // a ledger that cannot be read shows nothing spent
      (void)store.ledger_sum(static_cast<uint32_t>(s.id), 0, w.start, w.end, &spent);
      json period;
      period["start"] = w.start;
      period["end"] = w.end;
      period["used_ns"] = spent;
      period["used"] = format_duration(spent);
      if (!q.gpu_time.unlimited) {
        const int64_t left =
            w.contains(now) ? std::max<int64_t>(0, q.gpu_time.budget_ns - spent) : 0;
        period["left_ns"] = left;
        period["left"] = format_duration(left);
      }
      row["period"] = period;
    }
    j["rows"].push_back(row);
  }
  for (const auto& [vm, totals] : per_vm) {
    json row;
    row["student"] = "";
    row["course"] = "";
    row["assigned"] = false;
    row["removed"] = false;
    row["vms"] = json::array({vm});
    totals.put(&row);
    j["rows"].push_back(row);
  }

  // The series: GPU time per bucket and row label, over the span with usage,
  // on the wall clock of the students' course when they share one time zone
  // (days from its midnights, weeks from its Mondays), else in UTC.
  std::string zone_name;
  for (const UsageRecord* r : kept) {
    const std::string z = r->student ? by_id[r->student]->time_zone : "UTC";
    if (zone_name.empty()) zone_name = z;
    if (z != zone_name) zone_name = "UTC";
  }
  const TimeZone zone = TimeZone::find_or_utc(zone_name.empty() ? "UTC" : zone_name);
  j["time_zone"] = zone.name();
  json series = json::array();
  if (!kept.empty()) {
    const int64_t first = kept.front()->interval_start, last = kept.back()->interval_start;
    const int64_t bucket = bucket_for(last - first + 3600);
    // A bucket's window: an hour of the wall clock, or its day or week.
    auto window = [&](int64_t t) -> Window {
      if (bucket == 3600) {
        const int64_t local = zone.local_at(t) / 3600 * 3600;
        const int64_t start = std::min(t, zone.instant_of(local));
        return {start, start + 3600};
      }
      return window_at(GpuTime{false, 1, bucket == 86400 ? PeriodKind::kDay : PeriodKind::kWeek}, t,
                       zone);
    };
    std::map<int64_t, std::map<std::string, uint64_t>> points;
    for (const UsageRecord* r : kept) {
      const std::string name = r->student ? label[r->student] : "(" + vm_name[r->tenant] + ")";
      points[window(r->interval_start).start][name] += r->gpu_ns;
    }
    for (int64_t t = points.begin()->first; t <= points.rbegin()->first;) {
      const Window w = window(t);
      json p;
      p["start"] = w.start;
      p["end"] = w.end;
      const int64_t local = zone.local_at(w.start);
      p["label"] = bucket == 3600 ? format_time(local).substr(0, 16) : format_date(local);
      p["gpu_ns"] = json::object();
      if (auto it = points.find(w.start); it != points.end()) {
        for (const auto& [name, ns] : it->second) p["gpu_ns"][name] = ns;
      }
      series.push_back(p);
      t = std::max(w.end, t + 1);
    }
    j["bucket_s"] = bucket;
  } else {
    j["bucket_s"] = 3600;
  }
  j["series"] = series;
  *out = std::move(j);
  return {};
}

}  // namespace vgpu::admin
