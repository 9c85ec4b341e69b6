// The SQLite store: quotas at each level, settings, and what a VM runs under.
#include "sql_store.h"
#include "vgpu/policy/units.h"

namespace vgpu::policy {
namespace {

const char* period_text(PeriodKind p) {
  switch (p) {
    case PeriodKind::kDay:
      return "day";
    case PeriodKind::kWeek:
      return "week";
    case PeriodKind::kMonth:
      return "month";
    case PeriodKind::kRange:
      return "range";
  }
  return "week";
}

PeriodKind period_from(const std::string& s) {
  if (s == "day") return PeriodKind::kDay;
  if (s == "range") return PeriodKind::kRange;
  if (s == "month") return PeriodKind::kMonth;
  return PeriodKind::kWeek;
}

OnExhaust on_exhaust_from(const std::string& s) {
  if (s == "wait") return OnExhaust::kWait;
  if (s == "best-effort") return OnExhaust::kBestEffort;
  return OnExhaust::kReject;
}

std::string target_text(const QuotaTarget& t) {
  switch (t.kind) {
    case QuotaTarget::Kind::kDefault:
      return "default quota";
    case QuotaTarget::Kind::kCourse:
      return "quota of course " + t.name;
    case QuotaTarget::Kind::kStudent:
      return "quota of student " + t.name;
  }
  return "quota";
}

}  // namespace

Result valid_quota(const QuotaFields& f) {
  if (f.weight && (*f.weight < 1 || *f.weight > kMaxWeight)) {
    return Result::invalid_argument("weight must be between 1 and " + std::to_string(kMaxWeight));
  }
  if (f.gpu_time && !f.gpu_time->unlimited) {
    const GpuTime& g = *f.gpu_time;
    if (g.budget_ns < 0) return Result::invalid_argument("a GPU-time budget cannot be negative");
    if (g.period == PeriodKind::kRange && g.range_end <= g.range_start) {
      return Result::invalid_argument("the GPU-time range ends before it starts");
    }
  }
  if (f.memory && *f.memory > (uint64_t{1} << 60)) {
    return Result::invalid_argument("memory cap too large");
  }
  return {};
}

Result SqlStore::quota_scope(const Actor& by, const QuotaTarget& t, std::string* scope, int64_t* id,
                             Course* course) {
  switch (t.kind) {
    case QuotaTarget::Kind::kDefault:
      *scope = "default";
      *id = 0;
      return {};
    case QuotaTarget::Kind::kCourse:
      if (Result r = find_course(t.name, course); !r.ok()) return r;
      if (Result r = may_manage(by, *course); !r.ok()) return r;
      *scope = "course";
      *id = course->id;
      return {};
    case QuotaTarget::Kind::kStudent: {
      Student s;
      if (Result r = find_student(t.name, &s); !r.ok()) return r;
      if (Result r = may_manage(by, s.course); !r.ok()) return r;
      *scope = "student";
      *id = s.id;
      *course = s.course;
      return {};
    }
  }
  return Result::invalid_argument("unknown quota level");
}

bool SqlStore::read_quota(const std::string& scope, int64_t id, QuotaFields* out) {
  *out = {};
  sql::Stmt s(db_,
              "SELECT gpu_limited, gpu_ns, period, range_start, range_end, memory, weight, "
              "on_exhaust, placement FROM quotas WHERE scope = ?1 AND scope_id = ?2");
  s.bind(1, scope).bind(2, id);
  const int rc = s.step();
  if (rc == sql::kDone) return true;
  if (rc != sql::kRow) return false;
  if (!s.is_null(0)) {
    GpuTime g;
    g.unlimited = s.int64(0) == 0;
    if (!g.unlimited) {
      g.budget_ns = s.int64(1);
      g.period = period_from(s.text(2));
      g.range_start = s.int64(3);
      g.range_end = s.int64(4);
    }
    out->gpu_time = g;
  }
  if (!s.is_null(5)) out->memory = static_cast<uint64_t>(s.int64(5));
  if (!s.is_null(6)) out->weight = static_cast<uint32_t>(s.int64(6));
  if (!s.is_null(7)) out->on_exhaust = on_exhaust_from(s.text(7));
  if (!s.is_null(8)) {
    Placement p = Placement::kSpread;
    if (!parse_placement(s.text(8), &p).ok()) return false;  // the CHECK keeps this out
    out->placement = p;
  }
  return true;
}

bool SqlStore::write_quota(const std::string& scope, int64_t id, const QuotaFields& f) {
  if (f.empty()) {
    sql::Stmt del(db_, "DELETE FROM quotas WHERE scope = ?1 AND scope_id = ?2");
    del.bind(1, scope).bind(2, id);
    return del.step() == sql::kDone;
  }
  sql::Stmt s(db_,
              "INSERT INTO quotas(scope, scope_id, gpu_limited, gpu_ns, period, "
              "range_start, range_end, memory, weight, on_exhaust, placement) "
              "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
              "ON CONFLICT(scope, scope_id) DO UPDATE SET gpu_limited = ?3, gpu_ns = ?4, "
              "period = ?5, range_start = ?6, range_end = ?7, memory = ?8, weight = ?9, "
              "on_exhaust = ?10, placement = ?11");
  s.bind(1, scope).bind(2, id);
  for (int i = 3; i <= 11; ++i) s.bind_null(i);
  if (f.gpu_time) {
    s.bind(3, int64_t{f.gpu_time->unlimited ? 0 : 1});
    if (!f.gpu_time->unlimited) {
      s.bind(4, f.gpu_time->budget_ns).bind(5, std::string_view(period_text(f.gpu_time->period)));
      if (f.gpu_time->period == PeriodKind::kRange) {
        s.bind(6, f.gpu_time->range_start).bind(7, f.gpu_time->range_end);
      }
    }
  }
  if (f.memory) s.bind(8, static_cast<int64_t>(*f.memory));
  if (f.weight) s.bind(9, static_cast<int64_t>(*f.weight));
  if (f.on_exhaust) s.bind(10, on_exhaust_name(*f.on_exhaust));
  if (f.placement) s.bind(11, placement_name(*f.placement));
  return s.step() == sql::kDone;
}

Result SqlStore::set_quota(const Actor& by, const QuotaTarget& target, const QuotaFields& changes) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  if (changes.empty()) {
    return Result::invalid_argument(
        "nothing to set: give --gpu-time, --memory, --weight, --on-exhaust or --placement");
  }
  if (Result r = valid_quota(changes); !r.ok()) return r;
  if (target.kind == QuotaTarget::Kind::kDefault && by.role != Role::kAdmin) {
    return Result::permission_denied("permission denied: only admins set the default quota");
  }
  if (target.kind == QuotaTarget::Kind::kCourse && changes.weight && by.role != Role::kAdmin) {
    return Result::permission_denied(
        "permission denied: only admins set a course's weight (its share among courses)");
  }
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  std::string scope;
  int64_t id = 0;
  Course course;
  if (Result r = quota_scope(by, target, &scope, &id, &course); !r.ok()) return r;
  if (!change_quota_locked(by, target, scope, id, course.id, changes).ok() || !tx.commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::change_quota_locked(const Actor& by, const QuotaTarget& target,
                                     const std::string& scope, int64_t id, int64_t course_id,
                                     const QuotaFields& changes) {
  QuotaFields old;
  if (!read_quota(scope, id, &old)) return db_error();
  QuotaFields now = old;
  if (changes.gpu_time) now.gpu_time = changes.gpu_time;
  if (changes.memory) now.memory = changes.memory;
  if (changes.weight) now.weight = changes.weight;
  if (changes.on_exhaust) now.on_exhaust = changes.on_exhaust;
  if (changes.placement) now.placement = changes.placement;
  if (!write_quota(scope, id, now) ||
      !audit(by, "quota.set", target_text(target), course_id, describe(old), describe(now))) {
    return db_error();
  }
  return {};
}

Result SqlStore::reset_quota(const Actor& by, const QuotaTarget& target) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  if (target.kind == QuotaTarget::Kind::kDefault && by.role != Role::kAdmin) {
    return Result::permission_denied("permission denied: only admins change the default quota");
  }
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  std::string scope;
  int64_t id = 0;
  Course course;
  if (Result r = quota_scope(by, target, &scope, &id, &course); !r.ok()) return r;
  QuotaFields old;
  if (!read_quota(scope, id, &old)) return db_error();
  if (old.weight && target.kind == QuotaTarget::Kind::kCourse && by.role != Role::kAdmin) {
    return Result::permission_denied(
        "permission denied: only admins change a course's weight (reset would clear it)");
  }
  if (!write_quota(scope, id, {}) ||
      !audit(by, "quota.reset", target_text(target), course.id, describe(old), describe({})) ||
      !tx.commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::get_quota(const Actor& by, const QuotaTarget& target, QuotaFields* out) {
  std::lock_guard lock(mu_);
  std::string scope;
  int64_t id = 0;
  Course course;
  if (Result r = quota_scope(by, target, &scope, &id, &course); !r.ok()) return r;
  if (!read_quota(scope, id, out)) return db_error();
  return {};
}

Result SqlStore::set_refuse_unassigned(const Actor& by, bool refuse) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  if (by.role != Role::kAdmin) {
    return Result::permission_denied(
        "permission denied: only admins decide what unassigned VMs get");
  }
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  sql::Stmt cur(db_, "SELECT value FROM settings WHERE key = 'unassigned'");
  const std::string old = cur.step() == sql::kRow ? cur.text(0) : "run";
  sql::Stmt s(db_,
              "INSERT INTO settings(key, value) VALUES('unassigned', ?1) "
              "ON CONFLICT(key) DO UPDATE SET value = ?1");
  const std::string now = refuse ? "refuse" : "run";
  s.bind(1, now);
  if (s.step() != sql::kDone ||
      !audit(by, "settings.set", "unassigned VMs", 0, "unassigned=" + old, "unassigned=" + now) ||
      !tx.commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::refuse_unassigned(bool* out) {
  std::lock_guard lock(mu_);
  sql::Stmt cur(db_, "SELECT value FROM settings WHERE key = 'unassigned'");
  *out = cur.step() == sql::kRow && cur.text(0) == "refuse";
  return {};
}

Result SqlStore::vm_policy(TenantId tenant, VmPolicy* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_,
              "SELECT v.name, coalesce(s.id, 0), coalesce(s.name, ''), coalesce(c.id, 0), "
              "coalesce(c.name, ''), coalesce(c.time_zone, 'UTC'), coalesce(v.placement, '') "
              "FROM vms v "
              "LEFT JOIN students s ON s.id = v.student_id AND s.removed_at IS NULL "
              "LEFT JOIN courses c ON c.id = s.course_id WHERE v.tenant_id = ?1");
  s.bind(1, static_cast<int64_t>(tenant));
  if (const int rc = s.step(); rc != sql::kRow) {
    return rc == sql::kDone ? Result::not_found("no VM has tenant id " + std::to_string(tenant))
                            : db_error();
  }
  *out = {};
  out->tenant = tenant;
  out->vm = s.text(0);
  out->student_id = static_cast<uint32_t>(s.int64(1));
  out->student = s.text(2);
  out->course_id = static_cast<uint32_t>(s.int64(3));
  out->course = s.text(4);
  out->time_zone = s.text(5);
  if (Placement p; !s.text(6).empty() && parse_placement(s.text(6), &p).ok()) out->vm_placement = p;
  if ((out->student_id && !read_quota("student", out->student_id, &out->student_fields)) ||
      (out->course_id && !read_quota("course", out->course_id, &out->course_fields)) ||
      !read_quota("default", 0, &out->default_fields)) {
    return db_error();
  }
  sql::Stmt cur(db_, "SELECT value FROM settings WHERE key = 'unassigned'");
  out->refuse_unassigned = cur.step() == sql::kRow && cur.text(0) == "refuse";
  return {};
}

Result SqlStore::set_vm_placement(const Actor& by, const std::string& vm,
                                  std::optional<Placement> placement) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  sql::Stmt cur(db_,
                "SELECT coalesce(v.placement, ''), coalesce(s.name, '') FROM vms v "
                "LEFT JOIN students s ON s.id = v.student_id AND s.removed_at IS NULL "
                "WHERE v.name = ?1");
  cur.bind(1, vm);
  if (const int rc = cur.step(); rc != sql::kRow) {
    return rc == sql::kDone ? Result::not_found("unknown VM '" + vm + "'") : db_error();
  }
  const std::string old = cur.text(0), student = cur.text(1);
  int64_t course_id = 0;
  if (student.empty()) {
    if (by.role != Role::kAdmin) {
      return Result::permission_denied(
          "permission denied: only admins set the placement of a VM bound to no student");
    }
  } else {
    Student s;
    if (Result r = find_student(student, &s); !r.ok()) return r;
    if (Result r = may_manage(by, s.course); !r.ok()) return r;
    course_id = s.course.id;
  }
  sql::Stmt up(db_, "UPDATE vms SET placement = ?2 WHERE name = ?1");
  up.bind(1, vm);
  if (placement) {
    up.bind(2, std::string(placement_name(*placement)));
  } else {
    up.bind_null(2);
  }
  auto text = [](const std::string& p) { return p.empty() ? "(inherited)" : "placement=" + p; };
  const std::string now = placement ? std::string(placement_name(*placement)) : "";
  if (up.step() != sql::kDone ||
      !audit(by, "vm.placement", "vm " + vm, course_id, text(old), text(now)) || !tx.commit()) {
    return db_error();
  }
  return {};
}

}  // namespace vgpu::policy
