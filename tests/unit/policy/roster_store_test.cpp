// A class roster imported in one transaction (Store::import_students) on a
// real SQLite file: all or nothing, --partial, who may import, and the audit
// rows each student leaves.
#include <catch2/catch.hpp>

#include "temp_db.h"

using namespace vgpu;
using namespace vgpu::policy;
using namespace vgpu::policy::test;

namespace {

struct School {
  TempDb db;
  std::unique_ptr<Store> s = db.open();
  Result r;          // the refusal a test looks at
  Actor tina, olga;  // teachers of cs101 and ml200
  School() {
    REQUIRE(s);
    REQUIRE(s->add_user(root(), {0, "tina", 1001, Role::kTeacher, 0}).ok());
    REQUIRE(s->add_user(root(), {0, "olga", 1002, Role::kTeacher, 0}).ok());
    REQUIRE(s->actor_for_uid(1001, &tina).ok());
    REQUIRE(s->actor_for_uid(1002, &olga).ok());
    REQUIRE(s->create_course(tina, "cs101", "").ok());
    REQUIRE(s->create_course(olga, "ml200", "").ok());
    REQUIRE(s->add_student(olga, "mia", "ml200", {"mia-vm"}).ok());
  }
  std::vector<std::string> students(const std::string& course) {
    std::vector<StudentRow> rows;
    REQUIRE(s->list_students(root(), course, false, &rows).ok());
    std::vector<std::string> names;
    for (const StudentRow& row : rows) names.push_back(row.name);
    return names;
  }
  size_t audit_rows() {
    std::vector<AuditRow> rows;
    REQUIRE(s->audit_log(root(), 0, &rows).ok());
    return rows.size();
  }
};

// Rows numbered as a file's lines are: the header is line 1.
std::vector<RosterRow> roster(std::vector<RosterRow> rows) {
  for (size_t i = 0; i < rows.size(); ++i) rows[i].row = static_cast<int>(i) + 2;
  return rows;
}

}  // namespace

TEST_CASE("a good roster adds every student, as student add, uid and quota set would") {
  School o;
  const size_t audited = o.audit_rows();
  const auto rows = roster({{0, "ann", "ann-vm", "2001", "2h/week", "4GiB"},
                            {0, "ben", "", "", "", ""},
                            {0, "cat", "cat-vm", "", "", "none"}});
  std::vector<RosterOutcome> out;
  REQUIRE(o.s->import_students(o.tina, "cs101", rows, {}, &out).ok());
  REQUIRE(out.size() == 3);
  for (const RosterOutcome& r : out) {
    CHECK(r.added);
    CHECK(r.why.empty());
  }
  CHECK(out[1].row == 3);
  CHECK(out[1].name == "ben");
  CHECK(o.students("cs101") == std::vector<std::string>{"ann", "ben", "cat"});

  std::vector<StudentRow> listed;
  REQUIRE(o.s->list_students(o.tina, "cs101", false, &listed).ok());
  CHECK(listed[0].vms == std::vector<std::string>{"ann-vm"});
  CHECK(listed[0].uid == 2001);
  CHECK(listed[1].uid == -1);
  QuotaFields q;
  REQUIRE(o.s->get_quota(o.tina, {QuotaTarget::Kind::kStudent, "ann"}, &q).ok());
  REQUIRE(q.gpu_time);
  CHECK(q.gpu_time->budget_ns == int64_t{2} * 3600 * 1000000000);
  CHECK(q.memory == uint64_t{4} << 30);
  REQUIRE(o.s->get_quota(o.tina, {QuotaTarget::Kind::kStudent, "cat"}, &q).ok());
  CHECK(q.memory == uint64_t{0});  // "none": no cap, set here
  CHECK_FALSE(q.gpu_time);         // not set: the course's applies

  // ann: student.add, vm.bind, student.uid, quota.set; ben: student.add; cat:
  // student.add, vm.bind, quota.set. Each by tina.
  std::vector<AuditRow> log;
  REQUIRE(o.s->audit_log(root(), 0, &log).ok());
  REQUIRE(log.size() == audited + 8);
  std::vector<std::string> actions;
  for (size_t i = audited; i < log.size(); ++i) {
    actions.push_back(log[i].action + " " + log[i].object);
    CHECK(log[i].actor == "tina");
  }
  CHECK(actions == std::vector<std::string>{"student.add student ann", "vm.bind vm ann-vm",
                                            "student.uid student ann",
                                            "quota.set quota of student ann",
                                            "student.add student ben", "student.add student cat",
                                            "vm.bind vm cat-vm", "quota.set quota of student cat"});
}

TEST_CASE("one bad roster row and nothing at all is added") {
  School o;
  const size_t audited = o.audit_rows();
  auto rows = roster({{0, "ann", "ann-vm", "", "", ""},
                      {0, "ben", "ben-vm", "", "2h/fortnight", ""},  // bad budget
                      {0, "cat", "", "", "", ""}});
  std::vector<RosterOutcome> out;
  CHECK((o.r = o.s->import_students(o.tina, "cs101", rows, {}, &out)).code() ==
        Result::Code::kInvalidArgument);
  CHECK_THAT(o.r.message(), Catch::Contains("1 of 3 roster rows refused; nothing was added"));
  REQUIRE(out.size() == 3);
  CHECK_FALSE(out[0].added);
  CHECK(out[0].why.empty());  // good, but not added
  CHECK_FALSE(out[1].added);
  CHECK_THAT(out[1].why, Catch::Contains("gpu_time"));
  CHECK(out[1].row == 3);
  CHECK(o.students("cs101").empty());
  CHECK(o.audit_rows() == audited);
  // ann's VM was bound inside the rolled-back transaction: it is free again.
  REQUIRE(o.s->add_student(o.tina, "zoe", "cs101", {"ann-vm"}).ok());
}

TEST_CASE("each kind of bad roster row is refused with its own reason") {
  School o;
  auto rows = roster({{0, "ok1", "", "", "", ""},
                      {0, "mia", "", "", "", ""},               // exists (in ml200)
                      {0, "dup", "", "", "", ""},               // on two rows
                      {0, "bad/name", "", "", "", ""},          // not a name
                      {0, "vmthief", "mia-vm", "", "", ""},     // another course's VM
                      {0, "uidbad", "", "-3", "", ""},          // not a uid
                      {0, "uidbig", "", "4294967295", "", ""},  // (uid_t)-1
                      {0, "membad", "", "", "", "-1GiB"},       // negative size
                      {0, "dup", "", "", "", ""},
                      {0, "ok2", "ok2-vm", "", "", ""}});
  std::vector<RosterOutcome> out;
  CHECK((o.r = o.s->import_students(o.tina, "cs101", rows, {}, &out)).code() ==
        Result::Code::kInvalidArgument);
  REQUIRE(out.size() == 10);
  CHECK(out[0].why.empty());
  CHECK_THAT(out[1].why, Catch::Contains("student 'mia' already exists"));
  CHECK_THAT(out[2].why, Catch::Contains("student 'dup' is on rows 4 and 10"));
  CHECK(out[8].why == out[2].why);
  CHECK_THAT(out[3].why, Catch::Contains("bad/name"));
  CHECK_THAT(out[4].why, Catch::Contains("bound to student 'mia'"));
  CHECK_THAT(out[5].why, Catch::Contains("uid '-3'"));
  CHECK_THAT(out[6].why, Catch::Contains("uid '4294967295'"));
  CHECK_THAT(out[7].why, Catch::StartsWith("memory:"));
  CHECK(out[9].why.empty());
  CHECK(o.students("cs101").empty());
  CHECK(o.students("ml200") == std::vector<std::string>{"mia"});
}

TEST_CASE("--partial keeps the good rows and reports the bad ones") {
  School o;
  const auto rows = roster({{0, "ann", "ann-vm", "2001", "", ""},
                            {0, "mia", "", "", "", ""},
                            {0, "ben", "mia-vm", "", "", ""},  // refused after its insert: undone
                            {0, "cat", "", "", "1h/day", ""}});
  ImportOptions partial;
  partial.partial = true;
  std::vector<RosterOutcome> out;
  REQUIRE(o.s->import_students(o.tina, "cs101", rows, partial, &out).ok());
  REQUIRE(out.size() == 4);
  CHECK(out[0].added);
  CHECK_FALSE(out[1].added);
  CHECK_FALSE(out[2].added);
  CHECK_THAT(out[2].why, Catch::Contains("mia-vm"));
  CHECK(out[3].added);
  CHECK(o.students("cs101") == std::vector<std::string>{"ann", "cat"});
  // ben's row was inserted before its VM was refused: none of it stayed.
  std::vector<AuditRow> log;
  REQUIRE(o.s->audit_log(root(), 0, &log).ok());
  for (const AuditRow& a : log) CHECK(a.object != "student ben");
  CHECK(o.s->add_student(o.tina, "ben", "cs101", {}).ok());
}

TEST_CASE("a dry run checks every row and changes nothing") {
  School o;
  const size_t audited = o.audit_rows();
  ImportOptions dry;
  dry.dry_run = true;
  dry.partial = true;
  std::vector<RosterOutcome> out;
  REQUIRE(
      o.s->import_students(o.tina, "cs101", roster({{0, "ann", "", "", "", ""}}), dry, &out).ok());
  REQUIRE(out.size() == 1);
  CHECK_FALSE(out[0].added);
  CHECK(out[0].why.empty());
  CHECK(o.students("cs101").empty());
  CHECK(o.audit_rows() == audited);
}

TEST_CASE("a teacher imports only into their own course") {
  School o;
  const size_t audited = o.audit_rows();
  std::vector<RosterOutcome> out;
  const auto rows = roster({{0, "ann", "", "", "", ""}});
  CHECK((o.r = o.s->import_students(o.tina, "ml200", rows, {}, &out)).code() ==
        Result::Code::kPermissionDenied);
  CHECK_THAT(o.r.message(), Catch::Contains("not one of tina's courses"));
  CHECK(out.empty());
  ImportOptions partial;
  partial.partial = true;
  CHECK((o.r = o.s->import_students(o.tina, "ml200", rows, partial, &out)).code() ==
        Result::Code::kPermissionDenied);
  CHECK((o.r = o.s->import_students(o.tina, "nope", rows, {}, &out)).code() ==
        Result::Code::kNotFound);
  CHECK_THAT(o.r.message(), Catch::Contains("unknown course 'nope'"));
  CHECK((o.r = o.s->import_students(o.tina, "cs101", {}, {}, &out)).code() ==
        Result::Code::kInvalidArgument);
  CHECK(o.students("ml200") == std::vector<std::string>{"mia"});
  CHECK(o.audit_rows() == audited);
  // Admins import anywhere; the teacher of the course does too.
  CHECK(o.s->import_students(root(), "ml200", rows, {}, &out).ok());
  CHECK(o.s->import_students(o.olga, "ml200", roster({{0, "bo", "", "", "", ""}}), {}, &out).ok());
  CHECK(o.students("ml200") == std::vector<std::string>{"ann", "bo", "mia"});
}
