#include "usage_breakdown.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace vgpu::admin {

using nlohmann::json;
using namespace vgpu::policy;

namespace {

// One budget holder: a student, or a VM bound to no student.
struct Member {
  int64_t course_key = 0;  // the course's id; 0: unassigned
  std::string course, student;
  bool assigned = true, removed = false;
  std::vector<std::string> vms;
  TimeZone zone;
  std::optional<GpuTime> quota;  // none: not known (a removed student's)
  int64_t since_seen = 0;        // added (a VM: first seen)
  int64_t until_seen = 0;        // removed (0: still here)
};

// Usage of one row: a period (or the whole span) and a student or course.
struct Row {
  Window span;
  uint64_t gpu_ns = 0;
  std::set<int64_t> members;  // the holders whose usage it holds
};

// The budget `m`'s quota gives over `span`: from the quota period in which
// they were added to the one in which they were removed. `to_period_end`:
// the span ends now, and the quota period under way counts whole.
std::optional<int64_t> budget_of(const Member& m, Window span, bool to_period_end, int64_t now) {
  if (!m.quota || m.quota->unlimited) return std::nullopt;
  const GpuTime& g = *m.quota;
  const int64_t start = std::max(span.start, window_at(g, m.since_seen, m.zone).start);
  int64_t end = span.end;
  if (to_period_end) end = std::max(end, window_at(g, now, m.zone).end);
  if (m.until_seen) end = std::min(end, window_at(g, m.until_seen - 1, m.zone).end);
  if (end <= start) return 0;
  return budget_between(g, m.zone, start, end);
}

class Builder {
 public:
  Builder(Store& store, const Actor& by, const ReportFilter& f, const Breakdown& b, int64_t now)
      : store_(store), by_(by), f_(f), b_(b), now_(now), until_(f.until ? f.until : now + 1) {}

  Result run(json* out) {
    if (Result r = load_students(); !r.ok()) return r;
    std::vector<UsageRecord> ledger;
    std::vector<VmRow> vms;
    if (!store_.usage_rows(f_.since, until_, &ledger).ok() || !store_.list_vms(&vms).ok()) {
      return Result::storage("cannot read the ledger");
    }
    for (const VmRow& v : vms) vm_rows_[v.tenant] = v;
    // Unassigned VMs only for admins looking at everything.
    with_unassigned_ = by_.role == Role::kAdmin && f_.course.empty() && f_.student.empty();
    for (const UsageRecord& r : ledger) add(r);
    *out = answer();
    return {};
  }

 private:
  const TimeZone& zone(const std::string& name) {
    auto it = zones_.find(name);
    if (it == zones_.end()) it = zones_.emplace(name, TimeZone::find_or_utc(name)).first;
    return it->second;
  }

  Result load_students() {
    std::vector<StudentRow> students;
    if (Result r = store_.list_students(by_, f_.course, true, &students); !r.ok()) return r;
    if (!f_.student.empty()) {
      std::erase_if(students, [&](const StudentRow& s) { return s.name != f_.student; });
      if (students.empty()) return Result::not_found("unknown student '" + f_.student + "'");
    }
    for (const StudentRow& s : students) {
      Member m;
      m.course_key = s.course_id;
      m.course = s.course;
      m.student = s.name;
      m.removed = s.removed_at != 0;
      m.vms = s.vms;
      m.zone = zone(s.time_zone);
      m.since_seen = s.created_at;
      m.until_seen = s.removed_at;
      if (!m.removed) {  // the store keeps no quota of removed students
        QuotaFields own, course;
        if (store_.get_quota(by_, {QuotaTarget::Kind::kStudent, s.name}, &own).ok() &&
            store_.get_quota(by_, {QuotaTarget::Kind::kCourse, s.course}, &course).ok()) {
          m.quota = resolve_student_quota(own, course).gpu_time;
        }
      }
      members_[s.id] = std::move(m);
    }
    return {};
  }

  // The holder of an unassigned VM's usage, made on first sight.
  const Member& vm_member(TenantId tenant) {
    const int64_t key = -static_cast<int64_t>(tenant);
    auto it = members_.find(key);
    if (it != members_.end()) return it->second;
    if (!default_quota_) {
      QuotaFields d;  // unreadable: the built-in default
      (void)store_.get_quota(by_, {QuotaTarget::Kind::kDefault, ""}, &d);
      default_quota_ = resolve_default_quota(d).gpu_time;
    }
    Member m;
    m.assigned = false;
    const VmRow& v = vm_rows_[tenant];
    m.vms = {v.name};
    m.quota = default_quota_;
    m.since_seen = v.first_seen;
    return members_[key] = std::move(m);
  }

  void add(const UsageRecord& r) {
    int64_t key = 0;
    if (r.student != 0 && members_.count(r.student)) {
      key = r.student;
    } else if (r.student == 0 && with_unassigned_) {
      key = -static_cast<int64_t>(r.tenant);
      vm_member(r.tenant);
    } else {
      return;
    }
    const Member& m = members_[key];
    const Window span = b_.period ? calendar_period_at(*b_.period, r.interval_start, m.zone)
                                  : Window{f_.since, until_};
    const int64_t group = b_.group == ReportGroup::kStudent ? key : m.course_key;
    Row& row = rows_[{span.start, group}];
    row.span = span;
    row.gpu_ns += r.gpu_ns;
    row.members.insert(key);
  }

  // The budget of a row: its student's, or each live student's of its
  // course (each unassigned VM's in it); none if any of them has no limit.
  std::optional<int64_t> quota_of(int64_t group, const Row& row) {
    std::vector<const Member*> holders;
    if (b_.group == ReportGroup::kStudent || group == 0) {
      for (int64_t key : row.members) holders.push_back(&members_[key]);
    } else {
      for (const auto& [key, m] : members_) {
        if (m.course_key == group && !m.removed) holders.push_back(&m);
      }
    }
    if (holders.empty()) return std::nullopt;
    const bool to_period_end = !b_.period && f_.until == 0;
    int64_t total = 0;
    for (const Member* m : holders) {
      const std::optional<int64_t> b = budget_of(*m, row.span, to_period_end, now_);
      if (!b) return std::nullopt;
      total += *b;
    }
    return total;
  }

  json answer() {
    using Key = std::tuple<std::string, bool, std::string, std::string, std::string>;
    std::vector<std::pair<Key, json>> out;
    for (const auto& [at, row] : rows_) {
      const int64_t group = at.second;
      const Member& m = members_[*row.members.begin()];
      json j;
      j["period"] = b_.period ? json(calendar_label(*b_.period, row.span.start, m.zone)) : json();
      j["start"] = row.span.start;
      j["end"] = row.span.end;
      j["time_zone"] = m.zone.name();
      j["course"] = m.course;
      j["assigned"] = m.assigned;
      if (b_.group == ReportGroup::kStudent) {
        j["student"] = m.student;
        j["removed"] = m.removed;
        j["vms"] = m.vms;
      } else {
        j["students"] = row.members.size();
      }
      j["gpu_ns"] = row.gpu_ns;
      const std::optional<int64_t> quota = quota_of(group, row);
      j["quota_ns"] = quota ? json(*quota) : json();
      const std::string first_vm = m.vms.empty() ? "" : m.vms.front();
      Key key{j["period"].is_null() ? "" : j["period"].get<std::string>(), !m.assigned, m.course,
              b_.group == ReportGroup::kStudent ? m.student : "", first_vm};
      out.emplace_back(std::move(key), std::move(j));
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    json j;
    j["since"] = f_.since;
    j["until"] = until_;
    j["generated_at"] = now_;
    j["by"] = json::array();
    if (b_.period) j["by"].push_back(calendar_name(*b_.period));
    j["by"].push_back(b_.group == ReportGroup::kStudent ? "student" : "course");
    j["rows"] = json::array();
    for (auto& [key, row] : out) j["rows"].push_back(std::move(row));
    return j;
  }

  Store& store_;
  const Actor& by_;
  const ReportFilter& f_;
  const Breakdown& b_;
  const int64_t now_, until_;
  bool with_unassigned_ = false;
  std::map<std::string, TimeZone> zones_;
  std::unordered_map<int64_t, Member> members_;  // student id; -tenant for an unassigned VM
  std::unordered_map<TenantId, VmRow> vm_rows_;
  std::optional<GpuTime> default_quota_;
  std::map<std::pair<int64_t, int64_t>, Row> rows_;  // (period start, student or course)
};

}  // namespace

bool parse_report_group(std::string_view text, ReportGroup* out) {
  if (text == "student") {
    *out = ReportGroup::kStudent;
  } else if (text == "course") {
    *out = ReportGroup::kCourse;
  } else {
    return false;
  }
  return true;
}

Result usage_breakdown(Store& store, const Actor& by, const ReportFilter& filter,
                       const Breakdown& breakdown, int64_t now, json* out) {
  return Builder(store, by, filter, breakdown, now).run(out);
}

}  // namespace vgpu::admin
