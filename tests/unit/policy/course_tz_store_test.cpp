// A course's time zone in the store (create, change, audit, refusals, the
// version 6 migration) and in the daemon's accounting: a Berlin student's
// daily budget renews at Berlin's midnight, read back from the ledger.
#include <sqlite3.h>

#include <catch2/catch.hpp>

#include "migrations.h"
#include "sql.h"
#include "temp_db.h"
#include "vgpu/policy/accounting.h"
#include "vgpu/policy/units.h"

using namespace vgpu;
using namespace vgpu::policy;
using namespace vgpu::policy::test;

namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t kMar30 = 1743289200;  // 2025-03-30 00:00 Europe/Berlin (23:00 UTC the day before)

std::string course_zone(Store& s, const std::string& name) {
  std::vector<CourseRow> courses;
  REQUIRE(s.list_courses(root(), &courses).ok());
  for (const CourseRow& c : courses) {
    if (c.name == name) return c.time_zone;
  }
  return "(no such course)";
}

size_t audit_rows(Store& s) {
  std::vector<AuditRow> log;
  REQUIRE(s.audit_log(root(), 0, &log).ok());
  return log.size();
}

}  // namespace

TEST_CASE("a course is created in a time zone, UTC by default") {
  TempDb db;
  auto s = db.open();
  REQUIRE(s);
  REQUIRE(s->create_course(root(), "cs101", "").ok());
  REQUIRE(s->create_course(root(), CourseSpec{"ml200", "", "Europe/Berlin"}).ok());
  CHECK(course_zone(*s, "cs101") == "UTC");
  CHECK(course_zone(*s, "ml200") == "Europe/Berlin");
  std::vector<AuditRow> log;
  REQUIRE(s->audit_log(root(), 0, &log).ok());
  CHECK(log.back().action == "course.create");
  CHECK(log.back().new_value == "tz=Europe/Berlin");
  // Students and VMs carry their course's zone.
  REQUIRE(s->add_student(root(), "alice", "ml200", {"a1"}).ok());
  std::vector<StudentRow> students;
  REQUIRE(s->list_students(root(), "", false, &students).ok());
  REQUIRE(students.size() == 1);
  CHECK(students[0].time_zone == "Europe/Berlin");
  TenantId a1 = 0;
  REQUIRE(s->tenant_for_vm("a1", &a1).ok());
  VmPolicy p;
  REQUIRE(s->vm_policy(a1, &p).ok());
  CHECK(p.time_zone == "Europe/Berlin");
  TenantId stray = 0;
  REQUIRE(s->tenant_for_vm("stray", &stray).ok());
  REQUIRE(s->vm_policy(stray, &p).ok());
  CHECK(p.time_zone == "UTC");
}

TEST_CASE("an unknown time zone is refused and changes nothing") {
  TempDb db;
  auto s = db.open();
  Result r;
  REQUIRE(s->create_course(root(), "cs101", "").ok());
  const size_t before = audit_rows(*s);
  CHECK((r = s->create_course(root(), CourseSpec{"ml200", "", "Mars/Olympus"})).code() ==
        Result::Code::kInvalidArgument);
  CHECK_THAT(r.message(), Catch::Contains("unknown time zone 'Mars/Olympus'"));
  CHECK(course_zone(*s, "ml200") == "(no such course)");
  CHECK((r = s->set_course_time_zone(root(), "cs101", "Europe/Berlinn")).code() ==
        Result::Code::kInvalidArgument);
  CHECK(course_zone(*s, "cs101") == "UTC");
  CHECK(audit_rows(*s) == before);
}

TEST_CASE("a course's time zone changes, audited, by its teacher or an admin only") {
  TempDb db;
  auto s = db.open();
  Result r;
  REQUIRE(s->add_user(root(), UserRow{0, "tina", 2001, Role::kTeacher, 0}).ok());
  REQUIRE(s->add_user(root(), UserRow{0, "olga", 2002, Role::kTeacher, 0}).ok());
  Actor tina, olga;
  REQUIRE(s->actor_for_uid(2001, &tina).ok());
  REQUIRE(s->actor_for_uid(2002, &olga).ok());
  REQUIRE(s->create_course(tina, "cs101", "").ok());
  CHECK((r = s->set_course_time_zone(olga, "cs101", "Asia/Tokyo")).code() ==
        Result::Code::kPermissionDenied);
  CHECK(course_zone(*s, "cs101") == "UTC");
  REQUIRE(s->set_course_time_zone(tina, "cs101", "America/New_York").ok());
  CHECK(course_zone(*s, "cs101") == "America/New_York");
  std::vector<AuditRow> log;
  REQUIRE(s->audit_log(root(), 0, &log).ok());
  CHECK(log.back().action == "course.set");
  CHECK(log.back().object == "course cs101");
  CHECK(log.back().actor == "tina");
  CHECK(log.back().old_value == "tz=UTC");
  CHECK(log.back().new_value == "tz=America/New_York");
  // The same zone again changes nothing and audits nothing.
  const size_t before = audit_rows(*s);
  REQUIRE(s->set_course_time_zone(root(), "cs101", "America/New_York").ok());
  CHECK(audit_rows(*s) == before);
  CHECK((r = s->set_course_time_zone(root(), "nope", "UTC")).code() == Result::Code::kNotFound);
}

TEST_CASE("a version 5 database gains course time zones, its courses in UTC", "[sqlite]") {
  TempDb db;
  {
    sql::Db raw;
    std::string why;
    REQUIRE(raw.open(db.path, &why));
    REQUIRE(migrate(raw, &why, 5));
    REQUIRE(raw.exec("INSERT INTO courses(name, created_at) VALUES('cs101', 100)", &why));
  }
  auto s = db.open();
  REQUIRE(s);
  CHECK(s->schema_version() == 10);
  CHECK(course_zone(*s, "cs101") == "UTC");
  REQUIRE(s->set_course_time_zone(root(), "cs101", "Europe/Berlin").ok());
  CHECK(course_zone(*s, "cs101") == "Europe/Berlin");
}

TEST_CASE("a Berlin student's daily budget renews at Berlin's midnight, across the March change") {
  TempDb db;
  auto s = db.open();
  REQUIRE(s->create_course(root(), CourseSpec{"ml200", "", "Europe/Berlin"}).ok());
  REQUIRE(s->add_student(root(), "alice", "ml200", {"a1"}).ok());
  QuotaFields f;
  GpuTime g;
  REQUIRE(parse_gpu_time("10ms/day", &g).ok());
  f.gpu_time = g;
  REQUIRE(s->set_quota(root(), {QuotaTarget::Kind::kStudent, "alice"}, f).ok());
  TenantId a1 = 0;
  REQUIRE(s->tenant_for_vm("a1", &a1).ok());
  std::vector<StudentRow> students;
  REQUIRE(s->list_students(root(), "", false, &students).ok());
  const uint32_t alice = static_cast<uint32_t>(students.at(0).id);
  // The ledger: 8 ms at 22:00 UTC on 2025-03-29 (23:00 in Berlin, Saturday),
  // 6 ms at 23:00 UTC (00:00 Sunday in Berlin).
  std::vector<UsageRecord> ledger{UsageRecord{a1, kMar30 - 3600, 8 * kMs, 1, 0, 0, 0, alice},
                                  UsageRecord{a1, kMar30, 6 * kMs, 1, 0, 0, 0, alice}};
  REQUIRE(s->record_usage(ledger).ok());

  int64_t now = kMar30 - 60;  // 23:59 Saturday in Berlin
  Accounting a(s.get(), [&] { return now; });
  REQUIRE(a.connect(a1).admitted);
  TenantStatus st = a.status_of(a1);
  CHECK(st.budget.window == Window{kMar30 - 86400, kMar30});
  CHECK(st.budget.spent_ns == 8 * kMs);  // Saturday's only: in UTC it would be 14 ms
  CHECK(a.reserve(a1, 5 * kMs).budget_ns == 2 * kMs);
  a.settle(a1, 2 * kMs, 2 * kMs);
  now = kMar30 - 1;
  CHECK(a.reserve(a1, 1).kind == Admission::Kind::kReject);
  now = kMar30;  // Berlin's midnight: a new budget
  Admission d = a.reserve(a1, 20 * kMs);
  CHECK(d.kind == Admission::Kind::kRun);
  CHECK(d.budget_ns == 10 * kMs);
  a.settle(a1, d.budget_ns, 0);
  st = a.status_of(a1);
  CHECK(st.budget.window == Window{kMar30, kMar30 + 23 * 3600});  // a 23-hour Sunday

  // A daemon started on Sunday reads Sunday's use (Berlin's) from the ledger.
  now = kMar30 + 7200;
  Accounting restarted(s.get(), [&] { return now; });
  REQUIRE(restarted.connect(a1).admitted);
  CHECK(restarted.status_of(a1).budget.spent_ns == 6 * kMs);
  d = restarted.reserve(a1, 20 * kMs);
  CHECK(d.budget_ns == 4 * kMs);
  restarted.settle(a1, d.budget_ns, 0);
  // Moving the course to UTC moves the window (2025-03-30 UTC); its use is read again.
  REQUIRE(s->set_course_time_zone(root(), "ml200", "UTC").ok());
  restarted.refresh();
  st = restarted.status_of(a1);
  CHECK(st.budget.window == Window{kMar30 + 3600, kMar30 + 3600 + 86400});
  CHECK(st.budget.spent_ns == 0);
}

TEST_CASE("a version 6 database keeps its quotas and takes monthly budgets", "[sqlite]") {
  TempDb db;
  {
    sql::Db raw;
    std::string why;
    REQUIRE(raw.open(db.path, &why));
    REQUIRE(migrate(raw, &why, 6));
    REQUIRE(raw.exec("INSERT INTO courses(name, created_at) VALUES('cs101', 100)", &why));
    REQUIRE(raw.exec("INSERT INTO quotas(scope, scope_id, gpu_limited, gpu_ns, period, memory, "
                     "weight, on_exhaust) VALUES('course', 1, 1, 7200000000000, 'week', 4096, 2, "
                     "'wait')",
                     &why));
    // Version 6 has no monthly budgets.
    CHECK_FALSE(raw.exec("INSERT INTO quotas(scope, scope_id, gpu_limited, gpu_ns, period) "
                         "VALUES('default', 0, 1, 1, 'month')",
                         &why));
  }
  auto s = db.open();
  REQUIRE(s);
  CHECK(s->schema_version() == 10);
  QuotaFields q;
  REQUIRE(s->get_quota(root(), {QuotaTarget::Kind::kCourse, "cs101"}, &q).ok());
  REQUIRE(q.gpu_time);
  CHECK(format_gpu_time(*q.gpu_time) == "2h/week");
  CHECK(q.memory == std::optional<uint64_t>(4096));
  CHECK(q.weight == std::optional<uint32_t>(2));
  CHECK(q.on_exhaust == std::optional<OnExhaust>(OnExhaust::kWait));

  GpuTime monthly;
  REQUIRE(parse_gpu_time("20h/month", &monthly).ok());
  QuotaFields f;
  f.gpu_time = monthly;
  REQUIRE(s->set_quota(root(), {QuotaTarget::Kind::kCourse, "cs101"}, f).ok());
  REQUIRE(s->get_quota(root(), {QuotaTarget::Kind::kCourse, "cs101"}, &q).ok());
  REQUIRE(q.gpu_time);
  CHECK(q.gpu_time->period == PeriodKind::kMonth);
  CHECK(format_gpu_time(*q.gpu_time) == "20h/month");
  CHECK(q.memory == std::optional<uint64_t>(4096));  // the other fields untouched
}
