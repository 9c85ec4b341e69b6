// Courses, students, VMs, quotas, roles and the audit log on a real SQLite file.
#include <atomic>
#include <thread>

#include <catch2/catch.hpp>

#include "temp_db.h"
#include "vgpu/policy/units.h"

using namespace vgpu;
using namespace vgpu::policy;
using namespace vgpu::policy::test;

namespace {

QuotaFields gpu(const char* text) {
  QuotaFields f;
  GpuTime g;
  REQUIRE(parse_gpu_time(text, &g).ok());
  f.gpu_time = g;
  return f;
}

struct Org {
  TempDb db;
  std::unique_ptr<Store> s = db.open();
  Result r;  // the refusal a test looks at
  Actor teacher, other;
  Org() {
    REQUIRE(s);
    REQUIRE(s->add_user(root(), {0, "tina", 1001, Role::kTeacher, 0}).ok());
    REQUIRE(s->add_user(root(), {0, "olga", 1002, Role::kTeacher, 0}).ok());
    REQUIRE(s->actor_for_uid(1001, &teacher).ok());
    REQUIRE(s->actor_for_uid(1002, &other).ok());
    REQUIRE(s->create_course(teacher, "cs101", "").ok());
    REQUIRE(s->create_course(root(), "ml200", "olga").ok());
  }
};

}  // namespace

TEST_CASE("uids map to roles; unknown uids are refused with advice") {
  Org o;
  CHECK(o.teacher.role == Role::kTeacher);
  CHECK(o.teacher.name == "tina");
  Actor a;
  CHECK((o.r = o.s->actor_for_uid(4242, &a)).code() == Result::Code::kPermissionDenied);
  CHECK_THAT(o.r.message(), Catch::Contains("vgpuctl user add"));
  CHECK((o.r = o.s->add_user(o.teacher, {0, "eve", 5, Role::kAdmin, 0})).code() ==
        Result::Code::kPermissionDenied);
}

TEST_CASE("teachers see and change only their own courses") {
  Org o;
  std::vector<CourseRow> courses;
  REQUIRE(o.s->list_courses(o.teacher, &courses).ok());
  REQUIRE(courses.size() == 1);
  CHECK(courses[0].name == "cs101");
  CHECK(courses[0].teacher == "tina");
  REQUIRE(o.s->list_courses(root(), &courses).ok());
  CHECK(courses.size() == 2);

  CHECK((o.r = o.s->add_student(o.teacher, "alice", "ml200", {})).code() ==
        Result::Code::kPermissionDenied);
  CHECK_THAT(o.r.message(), Catch::Contains("not one of tina's courses"));
  REQUIRE(o.s->add_student(o.teacher, "alice", "cs101", {"alice-vm"}).ok());
  REQUIRE(o.s->add_student(o.other, "bob", "ml200", {"bob-vm"}).ok());
  CHECK((o.r = o.s->set_quota(o.teacher, {QuotaTarget::Kind::kStudent, "bob"}, gpu("1h/day")))
            .code() == Result::Code::kPermissionDenied);
  CHECK((o.r = o.s->remove_student(o.teacher, "bob")).code() == Result::Code::kPermissionDenied);
  CHECK((o.r = o.s->delete_course(o.teacher, "ml200", true)).code() ==
        Result::Code::kPermissionDenied);
  // A teacher cannot take a VM bound in someone else's course.
  CHECK((o.r = o.s->bind_vm(o.teacher, "alice", "bob-vm")).code() == Result::Code::kConflict);
  CHECK_THAT(o.r.message(), Catch::Contains("bound to student 'bob'"));
  // Nor set a course's weight (its share among courses), nor the default.
  QuotaFields w;
  w.weight = 5;
  CHECK((o.r = o.s->set_quota(o.teacher, {QuotaTarget::Kind::kCourse, "cs101"}, w)).code() ==
        Result::Code::kPermissionDenied);
  CHECK((o.r = o.s->set_quota(o.teacher, {}, gpu("1h/day"))).code() ==
        Result::Code::kPermissionDenied);
  std::vector<StudentRow> students;
  REQUIRE(o.s->list_students(o.teacher, "", false, &students).ok());
  REQUIRE(students.size() == 1);
  CHECK(students[0].vms == std::vector<std::string>{"alice-vm"});
}

TEST_CASE("quotas combine student over course, and every change is audited") {
  Org o;
  REQUIRE(o.s->add_student(o.teacher, "alice", "cs101", {"alice-vm"}).ok());
  QuotaFields course = gpu("2h/week");
  course.on_exhaust = OnExhaust::kWait;
  course.memory = 4ull << 30;
  REQUIRE(o.s->set_quota(o.teacher, {QuotaTarget::Kind::kCourse, "cs101"}, course).ok());
  REQUIRE(o.s->set_quota(o.teacher, {QuotaTarget::Kind::kStudent, "alice"}, gpu("90m/day")).ok());
  TenantId t = 0;
  REQUIRE(o.s->tenant_for_vm("alice-vm", &t).ok());
  VmPolicy p;
  REQUIRE(o.s->vm_policy(t, &p).ok());
  CHECK(p.student == "alice");
  CHECK(p.course == "cs101");
  const Quota q = resolve_student_quota(p.student_fields, p.course_fields);
  CHECK(format_gpu_time(q.gpu_time) == "1h30m/day");
  CHECK(q.memory == 4ull << 30);
  CHECK(q.on_exhaust == OnExhaust::kWait);
  CHECK_FALSE(q.placement.has_value());  // the host's

  std::vector<AuditRow> log;
  REQUIRE(o.s->audit_log(root(), 0, &log).ok());
  const AuditRow& last = log.back();
  CHECK(last.action == "quota.set");
  CHECK(last.actor == "tina");
  CHECK(last.uid == 1001);
  CHECK(last.object == "quota of student alice");
  CHECK(last.old_value == "(nothing set)");
  CHECK(last.new_value == "gpu-time=1h30m/day");
  // The other teacher sees nothing of cs101 in the log.
  REQUIRE(o.s->audit_log(o.other, 0, &log).ok());
  for (const AuditRow& r : log) CHECK(r.object.find("alice") == std::string::npos);
}

TEST_CASE("a placement set on a course reaches its students, and a student's own wins") {
  Org o;
  REQUIRE(o.s->add_student(o.teacher, "alice", "cs101", {"alice-vm"}).ok());
  REQUIRE(o.s->add_student(o.teacher, "bob", "cs101", {"bob-vm"}).ok());
  QuotaFields pack;
  pack.placement = Placement::kPack;
  REQUIRE(o.s->set_quota(o.teacher, {QuotaTarget::Kind::kCourse, "cs101"}, pack).ok());
  QuotaFields spread;
  spread.placement = Placement::kSpread;
  REQUIRE(o.s->set_quota(o.teacher, {QuotaTarget::Kind::kStudent, "bob"}, spread).ok());
  auto placement_of = [&](const char* vm) {
    TenantId t = 0;
    REQUIRE(o.s->tenant_for_vm(vm, &t).ok());
    VmPolicy p;
    REQUIRE(o.s->vm_policy(t, &p).ok());
    return resolve_student_quota(p.student_fields, p.course_fields).placement;
  };
  CHECK(placement_of("alice-vm") == std::optional<Placement>(Placement::kPack));
  CHECK(placement_of("bob-vm") == std::optional<Placement>(Placement::kSpread));
  std::vector<AuditRow> log;
  REQUIRE(o.s->audit_log(root(), 0, &log).ok());
  CHECK(log.back().new_value == "placement=spread");
  // Another field set later keeps the placement.
  REQUIRE(o.s->set_quota(o.teacher, {QuotaTarget::Kind::kCourse, "cs101"}, gpu("1h/day")).ok());
  CHECK(placement_of("alice-vm") == std::optional<Placement>(Placement::kPack));
}

TEST_CASE("a VM's own placement wins over its student's and course's; its teacher sets it") {
  Org o;
  REQUIRE(o.s->add_student(o.teacher, "alice", "cs101", {"alice-a", "alice-b"}).ok());
  QuotaFields pack;
  pack.placement = Placement::kPack;
  REQUIRE(o.s->set_quota(o.teacher, {QuotaTarget::Kind::kCourse, "cs101"}, pack).ok());
  REQUIRE(o.s->set_vm_placement(o.teacher, "alice-b", Placement::kSpread).ok());
  auto policy_of = [&](const char* vm) {
    TenantId t = 0;
    REQUIRE(o.s->tenant_for_vm(vm, &t).ok());
    VmPolicy p;
    REQUIRE(o.s->vm_policy(t, &p).ok());
    return p;
  };
  CHECK_FALSE(policy_of("alice-a").vm_placement.has_value());
  CHECK(policy_of("alice-b").vm_placement == std::optional<Placement>(Placement::kSpread));
  std::vector<VmRow> vms;
  REQUIRE(o.s->list_vms(&vms).ok());
  REQUIRE(vms.size() == 2);
  CHECK_FALSE(vms[0].placement.has_value());
  CHECK(vms[1].placement == std::optional<Placement>(Placement::kSpread));
  std::vector<AuditRow> log;
  REQUIRE(o.s->audit_log(root(), 0, &log).ok());
  CHECK(log.back().action == "vm.placement");
  CHECK(log.back().object == "vm alice-b");
  CHECK(log.back().old_value == "(inherited)");
  CHECK(log.back().new_value == "placement=spread");

  // Another course's teacher may not; nobody may for a VM that does not exist.
  CHECK((o.r = o.s->set_vm_placement(o.other, "alice-b", Placement::kPack)).code() ==
        Result::Code::kPermissionDenied);
  CHECK((o.r = o.s->set_vm_placement(root(), "nobody-vm", Placement::kPack)).code() ==
        Result::Code::kNotFound);
  CHECK_THAT(o.r.message(), Catch::Contains("unknown VM 'nobody-vm'"));
  // An unassigned VM: admins only.
  TenantId stray = 0;
  REQUIRE(o.s->tenant_for_vm("stray", &stray).ok());
  CHECK(o.s->set_vm_placement(o.teacher, "stray", Placement::kPack).code() ==
        Result::Code::kPermissionDenied);
  REQUIRE(o.s->set_vm_placement(root(), "stray", Placement::kPack).ok());
  // Inherit again.
  REQUIRE(o.s->set_vm_placement(o.teacher, "alice-b", std::nullopt).ok());
  CHECK_FALSE(policy_of("alice-b").vm_placement.has_value());
  REQUIRE(o.s->audit_log(root(), 0, &log).ok());
  CHECK(log.back().new_value == "(inherited)");
}

TEST_CASE("invalid changes are refused whole") {
  Org o;
  CHECK((o.r = o.s->add_student(root(), "bad name", "cs101", {})).code() ==
        Result::Code::kInvalidArgument);
  CHECK((o.r = o.s->add_student(root(), "alice", "nope", {})).code() == Result::Code::kNotFound);
  CHECK_THAT(o.r.message(), Catch::Contains("unknown course 'nope'"));
  // A bad VM name rolls back the student too.
  CHECK((o.r = o.s->add_student(root(), "alice", "cs101", {"ok-vm", "bad/vm"})).code() ==
        Result::Code::kInvalidArgument);
  std::vector<StudentRow> students;
  REQUIRE(o.s->list_students(root(), "", true, &students).ok());
  CHECK(students.empty());
  std::vector<VmRow> vms;
  REQUIRE(o.s->list_vms(&vms).ok());
  CHECK(vms.empty());
  QuotaFields w;
  w.weight = 0;
  CHECK((o.r = o.s->set_quota(root(), {QuotaTarget::Kind::kCourse, "cs101"}, w)).code() ==
        Result::Code::kInvalidArgument);
  CHECK((o.r = o.s->set_quota(root(), {QuotaTarget::Kind::kStudent, "ghost"}, gpu("1h/day")))
            .code() == Result::Code::kNotFound);
  CHECK_THAT(o.r.message(), Catch::Contains("unknown student 'ghost'"));
}

TEST_CASE("removed students keep their ledger, and their VMs become unassigned") {
  Org o;
  REQUIRE(o.s->add_student(root(), "alice", "cs101", {"alice-vm"}).ok());
  TenantId t = 0;
  REQUIRE(o.s->tenant_for_vm("alice-vm", &t).ok());
  VmPolicy p;
  REQUIRE(o.s->vm_policy(t, &p).ok());
  REQUIRE(o.s->record_usage(std::vector{UsageRecord{t, 3600, 500, 1, 0, 0, 0, p.student_id}}).ok());
  CHECK((o.r = o.s->delete_course(root(), "cs101", false)).code() == Result::Code::kConflict);
  CHECK_THAT(o.r.message(), Catch::Contains("--force"));
  REQUIRE(o.s->delete_course(root(), "cs101", true).ok());
  REQUIRE(o.s->vm_policy(t, &p).ok());
  CHECK(p.student_id == 0);
  std::vector<StudentRow> students;
  REQUIRE(o.s->list_students(root(), "", true, &students).ok());
  REQUIRE(students.size() == 1);
  CHECK(students[0].removed_at > 0);
  int64_t ns = 0;
  REQUIRE(o.s->ledger_sum(static_cast<uint32_t>(students[0].id), 0, 0, 7200, &ns).ok());
  CHECK(ns == 500);
  // The name is free again.
  REQUIRE(o.s->create_course(root(), "cs101", "").ok());
  REQUIRE(o.s->add_student(root(), "alice", "cs101", {}).ok());
}

TEST_CASE("the ledger sums per student across hours and period boundaries") {
  Org o;
  REQUIRE(o.s->add_student(root(), "alice", "cs101", {"a1", "a2"}).ok());
  TenantId a1 = 0, a2 = 0, x = 0;
  REQUIRE(o.s->tenant_for_vm("a1", &a1).ok());
  REQUIRE(o.s->tenant_for_vm("a2", &a2).ok());
  REQUIRE(o.s->tenant_for_vm("stray", &x).ok());
  VmPolicy p;
  REQUIRE(o.s->vm_policy(a1, &p).ok());
  const uint32_t alice = p.student_id;
  const int64_t midnight = 1736121600;  // Monday 2025-01-06
  REQUIRE(o.s
              ->record_usage(std::vector{
                  UsageRecord{a1, midnight - 3600, 100, 1, 0, 0, 0, alice},  // Sunday 23:00
                  UsageRecord{a1, midnight, 10, 1, 0, 0, 0, alice},          // Monday 00:00
                  UsageRecord{a2, midnight, 20, 1, 0, 0, 0, alice},
                  UsageRecord{a1, midnight, 5, 1, 0, 0, 0, alice},             // same row, added up
                  UsageRecord{a2, midnight + 86400, 1000, 1, 0, 0, 0, alice},  // Tuesday
                  UsageRecord{x, midnight, 7, 1, 0, 0, 0, 0},
              })
              .ok());
  int64_t ns = 0;
  REQUIRE(o.s->ledger_sum(alice, 0, midnight, midnight + 86400, &ns).ok());
  CHECK(ns == 35);
  REQUIRE(o.s->ledger_sum(alice, 0, midnight - 86400, midnight, &ns).ok());
  CHECK(ns == 100);
  REQUIRE(o.s->ledger_sum(alice, 0, midnight, midnight + 7 * 86400, &ns).ok());
  CHECK(ns == 1035);
  REQUIRE(o.s->ledger_sum(0, x, midnight, midnight + 86400, &ns).ok());
  CHECK(ns == 7);
  REQUIRE(o.s->ledger_sum(0, a1, 0, INT64_MAX, &ns).ok());
  CHECK(ns == 0);  // a1's usage is alice's, not the unassigned VM's
}

TEST_CASE("readers on another connection see whole changes while a writer works") {
  Org o;
  auto reader = o.db.open();
  REQUIRE(reader);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 60; ++i) {
      const std::string name = "s" + std::to_string(i);
      // Each student comes with a VM in one transaction: a reader never sees one without the other.
      (void)o.s->add_student(root(), name, "cs101", {name + "-vm"});
      TenantId t = 0;
      (void)o.s->tenant_for_vm(name + "-vm", &t);
      (void)o.s->record_usage(std::vector{UsageRecord{t, 3600, 10, 1, 0, 0, 0, 0}});
    }
    done = true;
  });
  size_t seen = 0;
  int reads = 0;
  while (!done) {
    std::vector<StudentRow> students;
    REQUIRE(reader->list_students(root(), "", false, &students).ok());
    CHECK(students.size() >= seen);
    seen = students.size();
    for (const StudentRow& s : students) CHECK(s.vms.size() == 1);
    std::vector<UsageRecord> usage;
    REQUIRE(reader->usage_rows(0, 7200, &usage).ok());
    ++reads;
  }
  writer.join();
  CHECK(reads > 0);
}

TEST_CASE("a student's login: set by their teacher, it makes their VMs theirs to run") {
  Org o;
  REQUIRE(o.s->add_student(o.teacher, "alice", "cs101", {"alice-vm"}).ok());
  REQUIRE(o.s->add_student(o.other, "bob", "ml200", {"bob-vm"}).ok());
  auto usable = [&](const std::string& vm, uint32_t uid) {
    bool yes = false;
    REQUIRE(o.s->vm_usable_by(vm, uid, &yes).ok());
    return yes;
  };
  CHECK_FALSE(usable("alice-vm", 2001));  // no login set yet
  CHECK((o.r = o.s->set_student_uid(o.teacher, "bob", 2002)).code() ==
        Result::Code::kPermissionDenied);
  CHECK((o.r = o.s->set_student_uid(o.teacher, "nobody", 2002)).code() == Result::Code::kNotFound);
  REQUIRE(o.s->set_student_uid(o.teacher, "alice", 2001).ok());
  CHECK(usable("alice-vm", 2001));
  CHECK_FALSE(usable("alice-vm", 2002));
  CHECK_FALSE(usable("bob-vm", 2001));
  CHECK_FALSE(usable("unknown-vm", 2001));
  std::vector<StudentRow> rows;
  REQUIRE(o.s->list_students(o.teacher, "", false, &rows).ok());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].uid == 2001);
  // Admins may run as any VM; teachers only as their students' when it is their login.
  REQUIRE(o.s->add_user(root(), {0, "ada", 3001, Role::kAdmin, 0}).ok());
  CHECK(usable("bob-vm", 3001));
  CHECK_FALSE(usable("alice-vm", 1001));
  // Cleared, or the student removed: nobody's login any more.
  REQUIRE(o.s->set_student_uid(o.teacher, "alice", std::nullopt).ok());
  CHECK_FALSE(usable("alice-vm", 2001));
  REQUIRE(o.s->set_student_uid(o.teacher, "alice", 2001).ok());
  REQUIRE(o.s->remove_student(o.teacher, "alice").ok());
  CHECK_FALSE(usable("alice-vm", 2001));
}
