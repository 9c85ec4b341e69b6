// What the policy store holds besides the ledger: the people who may change
// it, courses, students and their VMs, quotas, settings and the audit log.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vgpu/policy/quota.h"

namespace vgpu::policy {

using TenantId = uint32_t;

enum class Role : uint8_t {
  kAdmin,    // everything: users, every course, the default quota, course weights
  kTeacher,  // their own courses, those courses' students and quotas
};

// Who asks. Admin-socket peers are mapped from their uid (root and the
// daemon's own uid are admins; others must be registered users).
struct Actor {
  uint32_t uid = 0;
  std::string name;
  Role role = Role::kAdmin;
  int64_t user_id = 0;  // 0: not a registered user (root, the daemon's uid, a database reader)
};

struct UserRow {
  int64_t id = 0;
  std::string name;
  uint32_t uid = 0;
  Role role = Role::kTeacher;
  int64_t created_at = 0;
};

struct CourseRow {
  int64_t id = 0;
  std::string name;
  std::string teacher;  // empty: admins only
  int64_t created_at = 0;
  int64_t removed_at = 0;  // 0: live
  int64_t students = 0;    // live students
  std::string time_zone = "UTC";  // an IANA name: its students' quota periods and reports
};

// A new course (vgpuctl course create).
struct CourseSpec {
  std::string name;
  std::string teacher;    // empty: the actor if a teacher, else no teacher
  std::string time_zone;  // an IANA name; empty: UTC
};

struct StudentRow {
  int64_t id = 0;
  std::string name;
  int64_t course_id = 0;
  std::string course;
  std::vector<std::string> vms;
  int64_t created_at = 0;
  int64_t removed_at = 0;  // 0: live
  int64_t uid = -1;        // their login here (-1: none): who may run as their VMs
  std::string time_zone = "UTC";  // their course's
};

// One row of a class roster (vgpuctl student import), as text from the file:
// the store parses and checks every field, as it would for one student.
struct RosterRow {
  int row = 0;  // where the row is in the file, for the report
  std::string name;
  std::string vm;        // a VM to bind ("": none)
  std::string uid;       // their login, a number ("": none)
  std::string gpu_time;  // their own quota, as `quota set --gpu-time` takes it ("": inherit)
  std::string memory;    // as `quota set --memory` takes it ("": inherit)
};

// What became of one roster row.
struct RosterOutcome {
  int row = 0;
  std::string name;
  bool added = false;  // false for every row when the import was not committed
  std::string why;     // why the row was refused ("": a good row)
};

struct ImportOptions {
  bool partial = false;  // add the good rows even if some are refused
  bool dry_run = false;  // only check: change nothing
};

struct QuotaTarget {
  enum class Kind : uint8_t { kDefault, kCourse, kStudent };
  Kind kind = Kind::kDefault;
  std::string name;  // the course or student
};

struct AuditRow {
  int64_t id = 0;
  int64_t at = 0;
  uint32_t uid = 0;
  std::string actor;
  std::string action;  // e.g. "quota.set"
  std::string object;  // e.g. "student alice"
  std::string old_value;
  std::string new_value;
};

// Everything the daemon needs to apply a quota to a connected VM.
struct VmPolicy {
  TenantId tenant = 0;
  std::string vm;
  uint32_t student_id = 0;  // 0: bound to no student
  std::string student;
  uint32_t course_id = 0;
  std::string course;
  QuotaFields student_fields, course_fields, default_fields;
  std::string time_zone = "UTC";  // the course's (unassigned VMs: UTC)
  bool refuse_unassigned = false;
  std::optional<Placement> vm_placement;  // the VM's own, over its quota levels'
};

std::string_view role_name(Role r);  // "admin", "teacher"
// "gpu-time=2h/week memory=4GiB weight=2 on-exhaust=reject", or "(nothing set)".
std::string describe(const QuotaFields& f);

}  // namespace vgpu::policy
