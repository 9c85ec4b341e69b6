// VMs attached to libvirt domains and the session ledger, on a real SQLite
// file: what attach and detach change, what they refuse (changing nothing),
// and sessions from start to end.
#include <catch2/catch.hpp>

#include "temp_db.h"

using namespace vgpu;
using namespace vgpu::policy;
using namespace vgpu::policy::test;

namespace {

constexpr const char* kUuidA = "6695eb01-f6a4-8304-79aa-97f2502e193f";
constexpr const char* kUuidB = "0a1b2c3d-0000-4000-8000-00000000000b";

struct Class {
  TempDb db;
  std::unique_ptr<Store> s = db.open();
  Result r;  // the refusal a test looks at
  Class() {
    REQUIRE(s);
    REQUIRE(s->create_course(root(), "cs101", "").ok());
    REQUIRE(s->add_student(root(), "alice", "cs101", {}).ok());
    REQUIRE(s->add_student(root(), "bob", "cs101", {"bob-vm"}).ok());
  }
  std::vector<DomainAttachment> attachments() {
    std::vector<DomainAttachment> out;
    REQUIRE(s->list_attachments(&out).ok());
    return out;
  }
  size_t audit_rows() {
    std::vector<AuditRow> rows;
    REQUIRE(s->audit_log(root(), 0, &rows).ok());
    return rows.size();
  }
};

}  // namespace

TEST_CASE("attaching a domain binds its VM to the student and records the UUID") {
  Class c;
  REQUIRE(c.s->attach_domain(root(), "alice-vm", kUuidA, "alice", false).ok());
  const auto a = c.attachments();
  REQUIRE(a.size() == 1);
  CHECK(a[0].vm == "alice-vm");
  CHECK(a[0].uuid == kUuidA);
  CHECK(a[0].student == "alice");
  CHECK(a[0].attached_at > 0);
  std::vector<VmRow> vms;
  REQUIRE(c.s->list_vms(&vms).ok());
  CHECK(vms[0].name == "alice-vm");
  CHECK(vms[0].student == "alice");
  CHECK(vms[0].domain_uuid == kUuidA);
  CHECK(vms[0].first_seen == 0);  // never connected yet

  SECTION("attaching again the same way changes nothing") {
    const size_t audited = c.audit_rows();
    CHECK(c.s->attach_domain(root(), "alice-vm", kUuidA, "alice", false).ok());
    CHECK(c.audit_rows() == audited);
  }
  SECTION("detaching unbinds it") {
    REQUIRE(c.s->detach_domain(root(), "alice-vm", false).ok());
    CHECK(c.attachments().empty());
    REQUIRE(c.s->list_vms(&vms).ok());
    CHECK(vms[0].student.empty());
    CHECK(vms[0].domain_uuid.empty());
    CHECK((c.r = c.s->detach_domain(root(), "alice-vm", false)).code() == Result::Code::kConflict);
    CHECK(c.r.message() == "VM 'alice-vm' is not attached to a libvirt domain");
  }
}

TEST_CASE("a VM already bound to its student can be attached") {
  Class c;
  CHECK(c.s->attach_domain(root(), "bob-vm", kUuidB, "bob", false).ok());
  CHECK(c.attachments().size() == 1);
}

TEST_CASE("refused attachments and detachments change nothing") {
  Class c;
  REQUIRE(c.s->attach_domain(root(), "alice-vm", kUuidA, "alice", false).ok());
  const std::string before = [&] {
    std::string all;
    for (const auto& a : c.attachments()) all += a.vm + a.uuid + a.student + ";";
    return all;
  }();
  const size_t audited = c.audit_rows();
  using Code = Result::Code;
  struct Case {
    const char* vm;
    const char* uuid;
    const char* student;
    Code code;
    const char* why;
  };
  for (const Case& k : {
           Case{"carol-vm", kUuidB, "carol", Code::kNotFound, "unknown student 'carol'"},
           Case{"bob-vm", kUuidB, "alice", Code::kConflict,
                "VM 'bob-vm' is bound to student 'bob': unbind it first"},
           Case{"alice-vm", kUuidB, "alice", Code::kConflict,
                "VM 'alice-vm' is attached to another domain "
                "(6695eb01-f6a4-8304-79aa-97f2502e193f): "
                "detach it first"},
           Case{"other", kUuidA, "alice", Code::kConflict,
                "domain 6695eb01-f6a4-8304-79aa-97f2502e193f is already attached as VM 'alice-vm'"},
           Case{"bad name", kUuidB, "alice", Code::kInvalidArgument,
                "VM name 'bad name' is not valid (1 to 63 of A-Z a-z 0-9 . _ -)"},
           Case{"x", "6695EB01-F6A4-8304-79AA-97F2502E193F", "alice", Code::kInvalidArgument,
                nullptr},
       }) {
    const Result r = c.s->attach_domain(root(), k.vm, k.uuid, k.student, false);
    CHECK(r.code() == k.code);
    if (k.why) CHECK(r.message() == k.why);
    CHECK(r.message().find('\n') == std::string::npos);
  }
  CHECK((c.r = c.s->detach_domain(root(), "bob-vm", false)).code() == Result::Code::kConflict);
  std::string after;
  for (const auto& a : c.attachments()) after += a.vm + a.uuid + a.student + ";";
  CHECK(after == before);
  CHECK(c.audit_rows() == audited);
}

TEST_CASE("a dry run checks and changes nothing") {
  Class c;
  CHECK(c.s->attach_domain(root(), "alice-vm", kUuidA, "alice", true).ok());
  CHECK(c.attachments().empty());
  CHECK((c.r = c.s->attach_domain(root(), "alice-vm", kUuidA, "zed", true)).code() ==
        Result::Code::kNotFound);
  REQUIRE(c.s->attach_domain(root(), "alice-vm", kUuidA, "alice", false).ok());
  CHECK(c.s->detach_domain(root(), "alice-vm", true).ok());
  CHECK(c.attachments().size() == 1);
}

TEST_CASE("teachers attach and detach only their own courses' VMs") {
  Class c;
  REQUIRE(c.s->add_user(root(), {0, "tina", 1001, Role::kTeacher, 0}).ok());
  Actor tina;
  REQUIRE(c.s->actor_for_uid(1001, &tina).ok());
  CHECK((c.r = c.s->attach_domain(tina, "alice-vm", kUuidA, "alice", false)).code() ==
        Result::Code::kPermissionDenied);
  CHECK(c.attachments().empty());
}

TEST_CASE("sessions record each run of a domain, and open ones are ended after a restart") {
  Class c;
  REQUIRE(c.s->attach_domain(root(), "alice-vm", kUuidA, "alice", false).ok());
  const TenantId tenant = c.attachments()[0].tenant;
  int64_t first = 0, second = 0;
  REQUIRE(c.s->begin_session(tenant, kUuidA, 1, 1000, &first).ok());
  REQUIRE(c.s->end_session(first, 1060, "shutdown", 5000).ok());
  REQUIRE(c.s->begin_session(tenant, kUuidA, 1, 2000, &second).ok());
  int ended = 0;
  REQUIRE(c.s->end_open_sessions(2100, "vgpud restarted", &ended).ok());
  CHECK(ended == 1);
  // Ending a session twice keeps the first end.
  REQUIRE(c.s->end_session(second, 2200, "destroyed", 1).ok());
  std::vector<VmSession> sessions;
  REQUIRE(c.s->list_sessions("alice-vm", 0, &sessions).ok());
  REQUIRE(sessions.size() == 2);
  CHECK(sessions[0].vm == "alice-vm");
  CHECK(sessions[0].uuid == kUuidA);
  CHECK(sessions[0].started_at == 1000);
  CHECK(sessions[0].ended_at == 1060);
  CHECK(sessions[0].end_reason == "shutdown");
  CHECK(sessions[0].gpu_ns == 5000);
  CHECK(sessions[1].ended_at == 2100);
  CHECK(sessions[1].end_reason == "vgpud restarted");
  REQUIRE(c.s->list_sessions("", 1500, &sessions).ok());
  CHECK(sessions.size() == 1);
}

TEST_CASE("a teacher attaches only the domains an admin made available to the course") {
  Class c;
  REQUIRE(c.s->add_user(root(), {0, "tina", 1001, Role::kTeacher, 0}).ok());
  REQUIRE(c.s->create_course(root(), "ml200", "tina").ok());
  REQUIRE(c.s->add_student(root(), "erin", "ml200", {}).ok());
  Actor tina;
  REQUIRE(c.s->actor_for_uid(1001, &tina).ok());

  // Her own course's student, but a domain nobody made available: refused,
  // nothing recorded (vgpud would plug its device into it as root).
  const size_t audited = c.audit_rows();
  CHECK((c.r = c.s->attach_domain(tina, "erin-vm", kUuidA, "erin", true)).code() ==
        Result::Code::kPermissionDenied);
  CHECK((c.r = c.s->attach_domain(tina, "erin-vm", kUuidA, "erin", false)).code() ==
        Result::Code::kPermissionDenied);
  CHECK_THAT(c.r.message(), Catch::Contains("vgpuctl vm allow DOMAIN --course ml200"));
  CHECK(c.attachments().empty());
  // Only admins open domains to a course.
  CHECK((c.r = c.s->allow_domain(tina, "ml200", kUuidA, true)).code() ==
        Result::Code::kPermissionDenied);
  CHECK((c.r = c.s->allow_domain(root(), "ml200", "not-a-uuid", true)).code() ==
        Result::Code::kInvalidArgument);
  CHECK((c.r = c.s->allow_domain(root(), "no-course", kUuidA, true)).code() ==
        Result::Code::kNotFound);
  CHECK(c.audit_rows() == audited);

  REQUIRE(c.s->allow_domain(root(), "ml200", kUuidA, true).ok());
  std::vector<std::string> open;
  REQUIRE(c.s->course_domains(tina, "ml200", &open).ok());
  CHECK(open == std::vector<std::string>{kUuidA});
  CHECK((c.r = c.s->course_domains(tina, "cs101", &open)).code() ==
        Result::Code::kPermissionDenied);
  REQUIRE(c.s->attach_domain(tina, "erin-vm", kUuidA, "erin", false).ok());
  CHECK(c.attachments().size() == 1);
  // Another domain stays closed to her; an admin attaches any.
  CHECK((c.r = c.s->attach_domain(tina, "erin-vm2", kUuidB, "erin", false)).code() ==
        Result::Code::kPermissionDenied);
  CHECK(c.s->attach_domain(root(), "bob-vm", kUuidB, "bob", false).ok());

  // Taken back: no new attachment of it (the one made stays).
  REQUIRE(c.s->allow_domain(root(), "ml200", kUuidA, false).ok());
  REQUIRE(c.s->course_domains(root(), "ml200", &open).ok());
  CHECK(open.empty());
  REQUIRE(c.s->detach_domain(tina, "erin-vm", false).ok());
  CHECK((c.r = c.s->attach_domain(tina, "erin-vm", kUuidA, "erin", false)).code() ==
        Result::Code::kPermissionDenied);
}
