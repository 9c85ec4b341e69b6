// The SQLite implementation of the policy store. One connection, guarded by
// one mutex; each change is one transaction. Split over a few files by topic:
// sqlite_store.cpp (VMs and the ledger), sqlite_people.cpp (users, courses,
// students, bindings), sqlite_quotas.cpp (quotas, settings), sqlite_audit.cpp,
// sqlite_domains.cpp (libvirt domains and their sessions).
#pragma once

#include <mutex>
#include <optional>

#include "sqlite.h"
#include "vgpu/policy/store.h"

namespace vgpu::policy {

class SqliteStore final : public Store {
 public:
  bool open(const std::string& path, const StoreOptions& options, std::string* why);

  Status tenant_for_vm(const std::string& vm, TenantId* out) override;
  Status find_vm(const std::string& vm, TenantId* out) override;
  Status list_vms(std::vector<VmRow>* out) override;
  Status record_usage(std::span<const UsageRecord> batch) override;
  Status usage_between(int64_t since, int64_t until, std::vector<UsageRecord>* out) override;
  Status usage_rows(int64_t since, int64_t until, std::vector<UsageRecord>* out) override;
  Status ledger_sum(uint32_t student, TenantId tenant, int64_t since, int64_t until,
                    int64_t* gpu_ns) override;
  int schema_version() override;

  Status actor_for_uid(uint32_t uid, Actor* out, std::string* why) override;
  Status add_user(const Actor& by, const UserRow& user, std::string* why) override;
  Status remove_user(const Actor& by, const std::string& name, std::string* why) override;
  Status list_users(const Actor& by, std::vector<UserRow>* out, std::string* why) override;

  using Store::create_course;
  Status create_course(const Actor& by, const CourseSpec& spec, std::string* why) override;
  Status set_course_time_zone(const Actor& by, const std::string& course,
                              const std::string& time_zone, std::string* why) override;
  Status delete_course(const Actor& by, const std::string& name, bool force,
                       std::string* why) override;
  Status list_courses(const Actor& by, std::vector<CourseRow>* out, std::string* why) override;
  Status add_student(const Actor& by, const std::string& name, const std::string& course,
                     const std::vector<std::string>& vms, std::string* why) override;
  Status remove_student(const Actor& by, const std::string& name, std::string* why) override;
  Status bind_vm(const Actor& by, const std::string& student, const std::string& vm,
                 std::string* why) override;
  Status unbind_vm(const Actor& by, const std::string& vm, std::string* why) override;
  Status set_student_uid(const Actor& by, const std::string& student, std::optional<uint32_t> uid,
                         std::string* why) override;
  Status import_students(const Actor& by, const std::string& course,
                         std::span<const RosterRow> rows, ImportOptions options,
                         std::vector<RosterOutcome>* out, std::string* why) override;
  Status vm_usable_by(const std::string& vm, uint32_t uid, bool* out) override;
  Status list_students(const Actor& by, const std::string& course, bool include_removed,
                       std::vector<StudentRow>* out, std::string* why) override;

  Status set_quota(const Actor& by, const QuotaTarget& target, const QuotaFields& changes,
                   std::string* why) override;
  Status reset_quota(const Actor& by, const QuotaTarget& target, std::string* why) override;
  Status get_quota(const Actor& by, const QuotaTarget& target, QuotaFields* out,
                   std::string* why) override;
  Status set_refuse_unassigned(const Actor& by, bool refuse, std::string* why) override;
  Status refuse_unassigned(bool* out) override;
  Status vm_policy(TenantId tenant, VmPolicy* out) override;

  Status attach_domain(const Actor& by, const std::string& vm, const std::string& uuid,
                       const std::string& student, bool dry_run, std::string* why) override;
  Status allow_domain(const Actor& by, const std::string& course, const std::string& uuid,
                      bool allow, std::string* why) override;
  Status course_domains(const Actor& by, const std::string& course,
                        std::vector<std::string>* uuids, std::string* why) override;
  Status detach_domain(const Actor& by, const std::string& vm, bool dry_run,
                       std::string* why) override;
  Status list_attachments(std::vector<DomainAttachment>* out) override;
  Status begin_session(TenantId tenant, const std::string& uuid, uint32_t student, int64_t at,
                       int64_t* id) override;
  Status end_session(int64_t id, int64_t at, const std::string& reason, uint64_t gpu_ns) override;
  Status end_open_sessions(int64_t at, const std::string& reason, int* ended) override;
  Status list_sessions(const std::string& vm, int64_t since, std::vector<VmSession>* out) override;

  Status audit_log(const Actor& by, int64_t since, std::vector<AuditRow>* out,
                   std::string* why) override;

 private:
  // Helpers; the caller holds mu_ (and, for changes, a transaction).
  struct Course {
    int64_t id = 0;
    std::string name;
    int64_t teacher_id = 0;  // 0: none
  };
  struct Student {
    int64_t id = 0;
    std::string name;
    Course course;
  };
  bool writable(std::string* why) const;
  // A change whose transaction did not begin: says so, changes nothing.
  Status not_begun(std::string* why) const;
  bool find_course(const std::string& name, Course* out, std::string* why);
  bool find_student(const std::string& name, Student* out, std::string* why);
  // Whether `by` may change (or see) the course.
  bool may_manage(const Actor& by, const Course& c, std::string* why) const;
  // The start of a change to student `name` (mu_ held): the store writable,
  // a transaction begun in *tx, the student found, `by` allowed their course.
  Status begin_student_change(const Actor& by, const std::string& name,
                              std::optional<sql::Transaction>* tx, Student* s, std::string* why);
  bool bind_locked(const Actor& by, const Student& s, const std::string& vm, std::string* why);
  // The writes of add_student, set_student_uid and set_quota, each audited,
  // inside the caller's transaction (the caller checked `by` may manage the course).
  Status insert_student_locked(const Actor& by, const std::string& name, const Course& course,
                               Student* out, std::string* why);
  bool write_uid_locked(const Actor& by, const Student& s, std::optional<uint32_t> uid,
                        std::string* why);
  bool change_quota_locked(const Actor& by, const QuotaTarget& target, const std::string& scope,
                           int64_t id, int64_t course_id, const QuotaFields& changes,
                           std::string* why);
  // One roster row inside import_students' transaction: all of it or none of
  // it (a savepoint). False with `why` if refused; a database error is
  // reported as "database error: ...".
  bool import_row_locked(const Actor& by, const Course& course, const RosterRow& row,
                         const std::string& duplicate, std::string* why);
  bool unbind_students_vms(int64_t student_id);
  // Resolves a quota target to (scope, id, course for access checks).
  bool quota_scope(const Actor& by, const QuotaTarget& t, std::string* scope, int64_t* id,
                   Course* course, std::string* why);
  bool read_quota(const std::string& scope, int64_t id, QuotaFields* out);
  bool write_quota(const std::string& scope, int64_t id, const QuotaFields& f);
  bool audit(const Actor& by, std::string_view action, const std::string& object, int64_t course_id,
             const std::string& old_value, const std::string& new_value);

  std::mutex mu_;
  sql::Db db_;
  bool read_only_ = false;
};

int64_t unix_now();
// A quota's values in range (weight, budget, range, memory); false with `why`.
bool valid_quota(const QuotaFields& f, std::string* why);
// Names of courses, students, users and VMs: [A-Za-z0-9._-]{1,63}.
bool valid_name(std::string_view name);
// A one-line "… is not a valid name" message.
std::string bad_name(std::string_view what, std::string_view name);

}  // namespace vgpu::policy
