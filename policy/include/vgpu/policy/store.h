// The policy store: tenants (VMs), the usage ledger, and the organisation
// around them (courses, students, quotas, users, the audit log), kept in
// SQLite on disk (the embedded default) or in a PostgreSQL server that the
// hosts of a department share.
//
// Changes take the Actor who makes them: each checks the actor's role, runs
// in one transaction, and writes an audit row (who, when, old -> new). A
// refused or invalid change returns a Result (result.h) with its category
// and a one-line message, and changes nothing. Any change on a store opened
// read-only is kReadOnly; one that cannot take the write lock is kBusy; a
// failure of the database itself is kStorage ("database error: ...").
//
// Thread-safe: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/policy/lease.h"
#include "vgpu/policy/records.h"
#include "vgpu/result.h"

namespace vgpu::policy {

// Usage of one tenant over one interval, as the daemon charged it.
struct UsageRecord {
  TenantId tenant = 0;
  int64_t interval_start = 0;  // unix seconds, start of the hour the usage falls in
  uint64_t gpu_ns = 0;
  uint64_t kernels = 0;
  uint64_t bytes_to_device = 0;
  uint64_t bytes_from_device = 0;
  uint64_t peak_memory = 0;  // max over the interval
  uint32_t student = 0;      // the student the VM was bound to (0: none)
  std::string host{};        // the vgpud that measured it (empty: before hosts were recorded)
  uint32_t gpu = 0;          // the index of its GPU on that host
};

// A vgpud that writes to the store, as it last reported itself (every few
// seconds while it runs): what `vgpuctl hosts` lists and a cloud scheduler
// would read (docs/scale-out.md).
struct HostRow {
  std::string name;
  int64_t started_at = 0;
  int64_t last_seen = 0;
  std::string backend;  // sim, cuda
  std::string gpus;     // its GPUs and their load, as JSON (the status's "gpus")
};

struct VmRow {
  TenantId tenant = 0;
  std::string name;
  int64_t first_seen = 0;
  int64_t last_seen = 0;  // 0 (and first_seen 0): bound to a student but never connected
  std::string student;    // empty: unassigned
  std::string domain_uuid;  // the libvirt domain it is attached to (empty: none)
  std::optional<Placement> placement;  // its own (none: its student's, course's, host's)
};

// A VM attached to a libvirt domain (`vgpuctl vm attach`, docs/libvirt.md).
struct DomainAttachment {
  TenantId tenant = 0;
  std::string vm;    // the tenant's name, and its socket's: <runtime-dir>/vms/VM.sock
  std::string uuid;  // the domain's UUID, lower case
  uint32_t student_id = 0;
  std::string student;
  int64_t attached_at = 0;
};

// One run of an attached domain, from its start to its stop.
struct VmSession {
  int64_t id = 0;
  TenantId tenant = 0;
  std::string vm;
  std::string uuid;
  uint32_t student_id = 0;
  int64_t started_at = 0;
  int64_t ended_at = 0;    // 0: still running
  std::string end_reason;  // shutdown, destroyed, crashed, failed, ... (docs/libvirt.md)
  uint64_t gpu_ns = 0;     // GPU time the VM used during the session
};

class Store {
 public:
  virtual ~Store() = default;
  // The tenant a VM name maps to, created on first sight; marks it seen now.
  virtual Result tenant_for_vm(const std::string& vm, TenantId* out) = 0;
  // The tenant a VM name maps to, 0 if there is none. A read only: in WAL
  // mode it never waits for a writer.
  virtual Result find_vm(const std::string& vm, TenantId* out) = 0;
  // Whether processes of `uid` may connect as the simulated VM `vm`: the VM
  // is bound to a live student with that uid, or the uid is a vgpu admin.
  virtual Result vm_usable_by(const std::string& vm, uint32_t uid, bool* out) = 0;
  virtual Result list_vms(std::vector<VmRow>* out) = 0;
  // Adds a batch of usage in one transaction (sums per tenant, student,
  // interval, host and GPU).
  virtual Result record_usage(std::span<const UsageRecord> batch) = 0;
  // The same for a batch from a host that may send it more than once (a
  // replay after a commit whose answer was lost): a host numbers its
  // batches in increasing order, and one numbered at or below the last the
  // host had applied is skipped (*applied false), changing nothing. kConflict
  // when the database refuses the batch's data (a VM it does not know):
  // sending it again cannot help.
  virtual Result record_host_usage(const std::string& host, int64_t seq,
                                   std::span<const UsageRecord> batch, bool* applied) = 0;
  // The number of the last batch applied for `host` (0: none).
  virtual Result last_host_batch(const std::string& host, int64_t* seq) = 0;
  // Usage summed per tenant over [since, until) (unix seconds).
  virtual Result usage_between(int64_t since, int64_t until, std::vector<UsageRecord>* out) = 0;
  // Ledger rows (per tenant, student, interval, host and GPU) over [since, until).
  virtual Result usage_rows(int64_t since, int64_t until, std::vector<UsageRecord>* out) = 0;
  // GPU ns charged to a student (or, with student 0, to VM `tenant` while
  // unassigned) over [since, until).
  virtual Result ledger_sum(uint32_t student, TenantId tenant, int64_t since, int64_t until,
                            int64_t* gpu_ns) = 0;
  virtual int schema_version() = 0;

  // --- the hosts that share the store ---
  // Records (or updates) a host's report of itself.
  virtual Result report_host(const HostRow& host) = 0;
  // Every host that ever reported, by name.
  virtual Result list_hosts(std::vector<HostRow>* out) = 0;
  // Takes, renews or gives back (request.give_back) `request.host`'s lease
  // of a budget window, in one transaction that sees every host's leases
  // and ledger rows (lease.h): never more than the budget minus the other
  // hosts' spending and live leases. kReadOnly, kBusy (the write lock),
  // kStorage; kInvalidArgument for a bad host name.
  virtual Result lease_budget(const LeaseRequest& request, const LeaseRules& rules,
                              LeaseGrant* out) = 0;

  // --- who may change things ---
  // The actor for a registered uid; kPermissionDenied if there is none.
  virtual Result actor_for_uid(uint32_t uid, Actor* out) = 0;
  virtual Result add_user(const Actor& by, const UserRow& user) = 0;
  virtual Result remove_user(const Actor& by, const std::string& name) = 0;
  virtual Result list_users(const Actor& by, std::vector<UserRow>* out) = 0;

  // --- courses, students, VMs (teachers see and change their own courses only) ---
  // `teacher` empty: the actor if a teacher, else no teacher. In UTC.
  Result create_course(const Actor& by, const std::string& name, const std::string& teacher) {
    return create_course(by, CourseSpec{name, teacher, ""});
  }
  // An unknown time zone is refused (kInvalidArgument), creating nothing.
  virtual Result create_course(const Actor& by, const CourseSpec& spec) = 0;
  // The course's time zone (an IANA name): its students' quota periods
  // renew at its midnights from now on. Audited as course.set.
  virtual Result set_course_time_zone(const Actor& by, const std::string& course,
                                      const std::string& time_zone) = 0;
  // Refused (kConflict) while the course has students, unless `force` (which removes them).
  virtual Result delete_course(const Actor& by, const std::string& name, bool force) = 0;
  virtual Result list_courses(const Actor& by, std::vector<CourseRow>* out) = 0;
  virtual Result add_student(const Actor& by, const std::string& name, const std::string& course,
                             const std::vector<std::string>& vms) = 0;
  virtual Result remove_student(const Actor& by, const std::string& name) = 0;
  virtual Result bind_vm(const Actor& by, const std::string& student, const std::string& vm) = 0;
  virtual Result unbind_vm(const Actor& by, const std::string& vm) = 0;
  // The student's login on this host (nullopt: none).
  virtual Result set_student_uid(const Actor& by, const std::string& student,
                                 std::optional<uint32_t> uid) = 0;
  // A class in one go: each row added to `course` as add_student,
  // set_student_uid and set_quota would add it (the same checks, the same
  // audit rows), all in one transaction. Every row is checked and `out` says
  // what became of each. If any row is refused, nothing is added and the
  // answer is kInvalidArgument (its message counts them), unless
  // `options.partial`, when the good rows are added and the answer is ok. A refusal of the
  // whole import (an unknown course, not the actor's course) leaves `out` empty.
  virtual Result import_students(const Actor& by, const std::string& course,
                                 std::span<const RosterRow> rows, ImportOptions options,
                                 std::vector<RosterOutcome>* out) = 0;
  // `course` empty: every course the actor sees. Removed students only if asked.
  virtual Result list_students(const Actor& by, const std::string& course, bool include_removed,
                               std::vector<StudentRow>* out) = 0;

  // --- quotas and settings ---
  // Sets the given fields at one level; fields not given keep their value.
  virtual Result set_quota(const Actor& by, const QuotaTarget& target,
                           const QuotaFields& changes) = 0;
  // Clears everything set at one level (it inherits again).
  virtual Result reset_quota(const Actor& by, const QuotaTarget& target) = 0;
  virtual Result get_quota(const Actor& by, const QuotaTarget& target, QuotaFields* out) = 0;
  // Whether VMs bound to no student are refused (else they run under the default quota).
  virtual Result set_refuse_unassigned(const Actor& by, bool refuse) = 0;
  virtual Result refuse_unassigned(bool* out) = 0;
  // The binding and quota levels of one VM (kNotFound for an unknown tenant).
  virtual Result vm_policy(TenantId tenant, VmPolicy* out) = 0;
  // A VM's own placement policy (which GPU of a host it goes to), over its
  // student's, its course's and the host's; none: theirs again. Admins, or
  // the teacher of the course the VM's student is in. Audited.
  virtual Result set_vm_placement(const Actor& by, const std::string& vm,
                                  std::optional<Placement> placement) = 0;

  // --- libvirt domains (docs/libvirt.md) ---
  // Binds VM `vm` to `student` and records that it is the libvirt domain
  // `uuid`. Refused, changing nothing, for an unknown student, a VM bound to
  // another student or attached to another domain, or a domain attached as
  // another VM (kNotFound, kConflict). Attaching again exactly as attached
  // changes nothing and succeeds. `dry_run`: only the checks.
  virtual Result attach_domain(const Actor& by, const std::string& vm, const std::string& uuid,
                               const std::string& student, bool dry_run) = 0;
  // A teacher attaches only the domains an admin made available to the
  // student's course (admins attach any).
  // Makes domain `uuid` available to `course`'s teachers, or no longer
  // (attachments made stay). Admins only.
  virtual Result allow_domain(const Actor& by, const std::string& course, const std::string& uuid,
                              bool allow) = 0;
  virtual Result course_domains(const Actor& by, const std::string& course,
                                std::vector<std::string>* uuids) = 0;
  // Undoes attach_domain: the VM is bound to no student and no domain.
  virtual Result detach_domain(const Actor& by, const std::string& vm, bool dry_run) = 0;
  virtual Result list_attachments(std::vector<DomainAttachment>* out) = 0;
  // The session ledger: one row per run of an attached domain.
  virtual Result begin_session(TenantId tenant, const std::string& uuid, uint32_t student,
                               int64_t at, int64_t* id) = 0;
  virtual Result end_session(int64_t id, int64_t at, const std::string& reason,
                             uint64_t gpu_ns) = 0;
  // Ends every session still open (a vgpud that stopped without ending them).
  virtual Result end_open_sessions(int64_t at, const std::string& reason, int* ended) = 0;
  // Sessions of `vm` (every VM if empty) that started at or after `since`, oldest first.
  virtual Result list_sessions(const std::string& vm, int64_t since,
                               std::vector<VmSession>* out) = 0;

  // --- the audit log (teachers see entries about their courses and their own) ---
  virtual Result audit_log(const Actor& by, int64_t since, std::vector<AuditRow>* out) = 0;
};

struct StoreOptions {
  // Opens an existing database without writing to it (no migrations): for
  // reports while the daemon is down. Refused unless it is at the latest schema.
  bool read_only = false;
};

// Opens (creating if needed) the database at `path` and migrates it to the
// current schema. kStorage if the file cannot be opened or migrated;
// kConflict for a read-only open of a database at another schema version.
Result open_sqlite_store(const std::string& path, std::unique_ptr<Store>* out,
                         StoreOptions options = {});
// The same on a PostgreSQL server that several hosts share (a libpq
// connection string or postgresql:// URL): its database must exist; vgpu
// creates its tables. Hosts serialise their changes with one advisory lock,
// so the store's rules hold across hosts as on one file.
Result open_postgres_store(const std::string& conninfo, std::unique_ptr<Store>* out,
                           StoreOptions options = {});
// Host names (HostRow, UsageRecord): a DNS name's letters, digits, '-', '.'
// (and '_'), 1 to 253 characters.
bool valid_host_name(std::string_view name);
// postgresql:// or postgres://: a server, else a SQLite file.
bool is_postgres_location(std::string_view location);
// The location fit for a log line: a URL's password left out.
std::string printable_location(const std::string& location);
// Either of the two, as `location` says.
Result open_store(const std::string& location, std::unique_ptr<Store>* out,
                  StoreOptions options = {});

}  // namespace vgpu::policy
