// The policy store over SQL, on SQLite or PostgreSQL (sql.h): the same
// statements on both. One connection, guarded by one mutex; each change is
// one transaction. Split over a few files by topic: sql_store.cpp (VMs and
// the ledger), sql_people.cpp (users, courses, students, bindings),
// sql_quotas.cpp (quotas, settings), sql_roster.cpp, sql_audit.cpp,
// sql_domains.cpp (libvirt domains and their sessions).
#pragma once

#include <mutex>
#include <optional>

#include "sql.h"
#include "vgpu/policy/store.h"

namespace vgpu::policy {

class SqlStore final : public Store {
 public:
  // A SQLite file, or (`postgres`) a PostgreSQL connection string.
  Result open(const std::string& location, bool postgres, const StoreOptions& options);

  Result tenant_for_vm(const std::string& vm, TenantId* out) override;
  Result find_vm(const std::string& vm, TenantId* out) override;
  Result list_vms(std::vector<VmRow>* out) override;
  Result record_usage(std::span<const UsageRecord> batch) override;
  Result record_host_usage(const std::string& host, int64_t seq, std::span<const UsageRecord> batch,
                           bool* applied) override;
  Result last_host_batch(const std::string& host, int64_t* seq) override;
  Result usage_between(int64_t since, int64_t until, std::vector<UsageRecord>* out) override;
  Result usage_rows(int64_t since, int64_t until, std::vector<UsageRecord>* out) override;
  Result ledger_sum(uint32_t student, TenantId tenant, int64_t since, int64_t until,
                    int64_t* gpu_ns) override;
  int schema_version() override;
  Result report_host(const HostRow& host) override;
  Result list_hosts(std::vector<HostRow>* out) override;
  Result lease_budget(const LeaseRequest& request, const LeaseRules& rules,
                      LeaseGrant* out) override;

  Result actor_for_uid(uint32_t uid, Actor* out) override;
  Result add_user(const Actor& by, const UserRow& user) override;
  Result remove_user(const Actor& by, const std::string& name) override;
  Result list_users(const Actor& by, std::vector<UserRow>* out) override;

  using Store::create_course;
  Result create_course(const Actor& by, const CourseSpec& spec) override;
  Result set_course_time_zone(const Actor& by, const std::string& course,
                              const std::string& time_zone) override;
  Result delete_course(const Actor& by, const std::string& name, bool force) override;
  Result list_courses(const Actor& by, std::vector<CourseRow>* out) override;
  Result add_student(const Actor& by, const std::string& name, const std::string& course,
                     const std::vector<std::string>& vms) override;
  Result remove_student(const Actor& by, const std::string& name) override;
  Result bind_vm(const Actor& by, const std::string& student, const std::string& vm) override;
  Result unbind_vm(const Actor& by, const std::string& vm) override;
  Result set_student_uid(const Actor& by, const std::string& student,
                         std::optional<uint32_t> uid) override;
  Result import_students(const Actor& by, const std::string& course,
                         std::span<const RosterRow> rows, ImportOptions options,
                         std::vector<RosterOutcome>* out) override;
  Result vm_usable_by(const std::string& vm, uint32_t uid, bool* out) override;
  Result list_students(const Actor& by, const std::string& course, bool include_removed,
                       std::vector<StudentRow>* out) override;

  Result set_quota(const Actor& by, const QuotaTarget& target, const QuotaFields& changes) override;
  Result reset_quota(const Actor& by, const QuotaTarget& target) override;
  Result get_quota(const Actor& by, const QuotaTarget& target, QuotaFields* out) override;
  Result set_refuse_unassigned(const Actor& by, bool refuse) override;
  Result refuse_unassigned(bool* out) override;
  Result vm_policy(TenantId tenant, VmPolicy* out) override;
  Result set_vm_placement(const Actor& by, const std::string& vm,
                          std::optional<Placement> placement) override;

  Result attach_domain(const Actor& by, const std::string& vm, const std::string& uuid,
                       const std::string& student, bool dry_run) override;
  Result allow_domain(const Actor& by, const std::string& course, const std::string& uuid,
                      bool allow) override;
  Result course_domains(const Actor& by, const std::string& course,
                        std::vector<std::string>* uuids) override;
  Result detach_domain(const Actor& by, const std::string& vm, bool dry_run) override;
  Result list_attachments(std::vector<DomainAttachment>* out) override;
  Result begin_session(TenantId tenant, const std::string& uuid, uint32_t student, int64_t at,
                       int64_t* id) override;
  Result end_session(int64_t id, int64_t at, const std::string& reason, uint64_t gpu_ns) override;
  Result end_open_sessions(int64_t at, const std::string& reason, int* ended) override;
  Result list_sessions(const std::string& vm, int64_t since, std::vector<VmSession>* out) override;

  Result audit_log(const Actor& by, int64_t since, std::vector<AuditRow>* out) override;

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
  // Ok, or kReadOnly for a store opened read-only.
  Result writable() const;
  // A change whose transaction did not begin: kBusy, changes nothing.
  Result not_begun() const;
  // kStorage: "database error: " and SQLite's last message.
  Result db_error() const;
  // A usage batch that failed: kConflict when the database refuses its data
  // (sending it again cannot help), else db_error().
  Result batch_error() const;
  // kNotFound ("unknown course 'x'") unless the course (student) is live.
  Result find_course(const std::string& name, Course* out);
  Result find_student(const std::string& name, Student* out);
  // Whether `by` may change (or see) the course: ok or kPermissionDenied.
  Result may_manage(const Actor& by, const Course& c) const;
  // The start of a change to student `name` (mu_ held): the store writable,
  // a transaction begun in *tx, the student found, `by` allowed their course.
  Result begin_student_change(const Actor& by, const std::string& name,
                              std::optional<sql::Transaction>* tx, Student* s);
  Result bind_locked(const Actor& by, const Student& s, const std::string& vm);
  // The writes of add_student, set_student_uid and set_quota, each audited,
  // inside the caller's transaction (the caller checked `by` may manage the course).
  Result insert_student_locked(const Actor& by, const std::string& name, const Course& course,
                               Student* out);
  Result write_uid_locked(const Actor& by, const Student& s, std::optional<uint32_t> uid);
  Result change_quota_locked(const Actor& by, const QuotaTarget& target, const std::string& scope,
                             int64_t id, int64_t course_id, const QuotaFields& changes);
  // One roster row inside import_students' transaction: all of it or none of
  // it (a savepoint). The row's refusal, or kStorage for a database error
  // (which ends the whole import).
  Result import_row_locked(const Actor& by, const Course& course, const RosterRow& row,
                           const std::string& duplicate);
  bool unbind_students_vms(int64_t student_id);
  // The number of the last batch applied for `host` (0: none); false on a database error.
  bool last_seq_locked(const std::string& host, int64_t* seq);
  // record_usage's inserts, in the caller's transaction.
  bool insert_usage_locked(std::span<const UsageRecord> batch);
  // Resolves a quota target to (scope, id, course for access checks).
  Result quota_scope(const Actor& by, const QuotaTarget& t, std::string* scope, int64_t* id,
                     Course* course);
  bool read_quota(const std::string& scope, int64_t id, QuotaFields* out);
  bool write_quota(const std::string& scope, int64_t id, const QuotaFields& f);
  bool audit(const Actor& by, std::string_view action, const std::string& object, int64_t course_id,
             const std::string& old_value, const std::string& new_value);

  std::mutex mu_;
  sql::Db db_;
  bool read_only_ = false;
};

int64_t unix_now();
// A quota's values in range (weight, budget, range, memory): ok or kInvalidArgument.
Result valid_quota(const QuotaFields& f);
// Names of courses, students, users and VMs: [A-Za-z0-9._-]{1,63}.
bool valid_name(std::string_view name);
// A one-line "… is not a valid name" message.
std::string bad_name(std::string_view what, std::string_view name);

}  // namespace vgpu::policy
