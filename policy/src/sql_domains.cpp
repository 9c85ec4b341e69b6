// The SQLite store: VMs attached to libvirt domains, and the session ledger
// (one row per run of an attached domain). See docs/libvirt.md.
#include <cctype>

#include "sql_store.h"

namespace vgpu::policy {
namespace {

// A domain UUID as libvirt prints it: 8-4-4-4-12 lower-case hex digits.
bool valid_uuid(std::string_view u) {
  if (u.size() != 36) return false;
  for (size_t i = 0; i < u.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? u[i] != '-'
             : !std::isxdigit(static_cast<unsigned char>(u[i])) ||
                   std::isupper(static_cast<unsigned char>(u[i])))
      return false;
  }
  return true;
}

std::string not_a_uuid(const std::string& uuid) {
  return "'" + uuid + "' is not a domain UUID (8-4-4-4-12 lower-case hex digits)";
}

std::string binding_text(const std::string& student, const std::string& uuid) {
  if (student.empty() && uuid.empty()) return "(unassigned)";
  std::string out = student.empty() ? "" : "student=" + student;
  if (!uuid.empty()) out += (out.empty() ? "" : " ") + std::string("domain=") + uuid;
  return out;
}

}  // namespace

Result SqlStore::attach_domain(const Actor& by, const std::string& vm, const std::string& uuid,
                               const std::string& student, bool dry_run) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  if (!valid_name(vm)) return Result::invalid_argument(bad_name("VM", vm));
  if (!valid_uuid(uuid)) return Result::invalid_argument(not_a_uuid(uuid));
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  Student s;
  if (Result r = find_student(student, &s); !r.ok()) return r;
  if (Result r = may_manage(by, s.course); !r.ok()) return r;
  if (by.role != Role::kAdmin) {
    // vgpud plugs its device into the domain with its own (root) libvirt
    // connection: a teacher may aim it only where an admin said.
    sql::Stmt open(db_, "SELECT 1 FROM course_domains WHERE course_id = ?1 AND domain_uuid = ?2");
    open.bind(1, s.course.id).bind(2, uuid);
    if (open.step() != sql::kRow) {
      return Result::permission_denied(
          "permission denied: domain " + uuid + " is not one an admin made available to course '" +
          s.course.name + "' (vgpuctl vm allow DOMAIN --course " + s.course.name + ")");
    }
  }
  sql::Stmt cur(db_,
                "SELECT coalesce(s.name, ''), coalesce(v.domain_uuid, '') FROM vms v "
                "LEFT JOIN students s ON s.id = v.student_id WHERE v.name = ?1");
  cur.bind(1, vm);
  std::string bound, domain;
  if (cur.step() == sql::kRow) {
    bound = cur.text(0);
    domain = cur.text(1);
  }
  if (!bound.empty() && bound != student) {
    return Result::conflict("VM '" + vm + "' is bound to student '" + bound + "': unbind it first");
  }
  if (!domain.empty() && domain != uuid) {
    return Result::conflict("VM '" + vm + "' is attached to another domain (" + domain +
                            "): detach it first");
  }
  sql::Stmt other(db_, "SELECT name FROM vms WHERE domain_uuid = ?1 AND name <> ?2");
  other.bind(1, uuid).bind(2, vm);
  if (other.step() == sql::kRow) {
    return Result::conflict("domain " + uuid + " is already attached as VM '" + other.text(0) +
                            "'");
  }
  if (dry_run || (bound == student && domain == uuid)) return {};
  sql::Stmt up(db_,
               "INSERT INTO vms(name, first_seen, last_seen, student_id, domain_uuid, attached_at) "
               "VALUES(?1, 0, 0, ?2, ?3, ?4) ON CONFLICT(name) DO UPDATE SET "
               "student_id = ?2, domain_uuid = ?3, attached_at = ?4");
  up.bind(1, vm).bind(2, s.id).bind(3, uuid).bind(4, unix_now());
  if (up.step() != sql::kDone ||
      !audit(by, "vm.attach", "vm " + vm, s.course.id, binding_text(bound, domain),
             binding_text(student, uuid)) ||
      !tx.commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::allow_domain(const Actor& by, const std::string& course, const std::string& uuid,
                              bool allow) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  if (by.role != Role::kAdmin) {
    return Result::permission_denied(
        "permission denied: only admins make domains available to a course");
  }
  if (!valid_uuid(uuid)) return Result::invalid_argument(not_a_uuid(uuid));
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  Course c;
  if (Result r = find_course(course, &c); !r.ok()) return r;
  sql::Stmt change(db_,
                   allow ? "INSERT INTO course_domains(course_id, domain_uuid) "
                           "VALUES(?1, ?2) ON CONFLICT DO NOTHING"
                         : "DELETE FROM course_domains WHERE course_id = ?1 AND domain_uuid = ?2");
  change.bind(1, c.id).bind(2, uuid);
  if (change.step() != sql::kDone) {
    return db_error();
  }
  const bool changed = db_.changes() > 0;
  if ((changed &&
       !audit(by, allow ? "course.domain.allow" : "course.domain.disallow", "domain " + uuid, c.id,
              allow ? "" : "course=" + course, allow ? "course=" + course : "")) ||
      !tx.commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::course_domains(const Actor& by, const std::string& course,
                                std::vector<std::string>* uuids) {
  std::lock_guard lock(mu_);
  Course c;
  if (Result r = find_course(course, &c); !r.ok()) return r;
  if (Result r = may_manage(by, c); !r.ok()) return r;
  sql::Stmt s(db_,
              "SELECT domain_uuid FROM course_domains WHERE course_id = ?1 ORDER BY domain_uuid");
  s.bind(1, c.id);
  uuids->clear();
  while (s.step() == sql::kRow) uuids->push_back(s.text(0));
  if (!s.finished()) return db_error();
  return {};
}

Result SqlStore::detach_domain(const Actor& by, const std::string& vm, bool dry_run) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  sql::Stmt cur(db_,
                "SELECT coalesce(s.name, ''), coalesce(v.domain_uuid, '') FROM vms v "
                "LEFT JOIN students s ON s.id = v.student_id WHERE v.name = ?1");
  cur.bind(1, vm);
  if (cur.step() != sql::kRow || cur.text(1).empty()) {
    return Result::conflict("VM '" + vm + "' is not attached to a libvirt domain");
  }
  const std::string student = cur.text(0), uuid = cur.text(1);
  int64_t course_id = 0;
  if (!student.empty()) {
    Student s;
    if (Result r = find_student(student, &s); !r.ok()) return r;
    if (Result r = may_manage(by, s.course); !r.ok()) return r;
    course_id = s.course.id;
  } else if (by.role != Role::kAdmin) {
    return Result::permission_denied(
        "permission denied: only admins detach a VM bound to no student");
  }
  if (dry_run) return {};
  sql::Stmt up(db_,
               "UPDATE vms SET student_id = NULL, domain_uuid = NULL, attached_at = NULL "
               "WHERE name = ?1");
  up.bind(1, vm);
  if (up.step() != sql::kDone ||
      !audit(by, "vm.detach", "vm " + vm, course_id, binding_text(student, uuid), "(unassigned)") ||
      !tx.commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::list_attachments(std::vector<DomainAttachment>* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_,
              "SELECT v.tenant_id, v.name, v.domain_uuid, coalesce(v.student_id, 0), "
              "coalesce(s.name, ''), coalesce(v.attached_at, 0) FROM vms v "
              "LEFT JOIN students s ON s.id = v.student_id "
              "WHERE v.domain_uuid IS NOT NULL ORDER BY v.name");
  out->clear();
  while (s.step() == sql::kRow) {
    out->push_back({static_cast<TenantId>(s.int64(0)), s.text(1), s.text(2),
                    static_cast<uint32_t>(s.int64(3)), s.text(4), s.int64(5)});
  }
  if (!s.finished()) return db_error();
  return {};
}

Result SqlStore::begin_session(TenantId tenant, const std::string& uuid, uint32_t student,
                               int64_t at, int64_t* id) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  sql::Stmt s(db_,
              "INSERT INTO vm_sessions(tenant_id, domain_uuid, student_id, started_at) "
              "VALUES(?1, ?2, ?3, ?4)");
  s.bind(1, static_cast<int64_t>(tenant)).bind(2, uuid).bind(3, static_cast<int64_t>(student));
  s.bind(4, at);
  if (s.step() != sql::kDone) return db_error();
  *id = db_.last_insert_id();
  return {};
}

Result SqlStore::end_session(int64_t id, int64_t at, const std::string& reason, uint64_t gpu_ns) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  sql::Stmt s(db_,
              "UPDATE vm_sessions SET ended_at = ?2, end_reason = ?3, gpu_ns = ?4 "
              "WHERE id = ?1 AND ended_at IS NULL");
  s.bind(1, id).bind(2, at).bind(3, reason).bind(4, static_cast<int64_t>(gpu_ns));
  return s.step() == sql::kDone ? Result() : db_error();
}

Result SqlStore::end_open_sessions(int64_t at, const std::string& reason, int* ended) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  sql::Stmt s(db_, "UPDATE vm_sessions SET ended_at = ?1, end_reason = ?2 WHERE ended_at IS NULL");
  s.bind(1, at).bind(2, reason);
  if (s.step() != sql::kDone) return db_error();
  *ended = static_cast<int>(db_.changes());
  return {};
}

Result SqlStore::list_sessions(const std::string& vm, int64_t since, std::vector<VmSession>* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_,
              "SELECT x.id, x.tenant_id, v.name, x.domain_uuid, x.student_id, x.started_at, "
              "coalesce(x.ended_at, 0), coalesce(x.end_reason, ''), x.gpu_ns "
              "FROM vm_sessions x JOIN vms v ON v.tenant_id = x.tenant_id "
              "WHERE (?1 = '' OR v.name = ?1) AND x.started_at >= ?2 ORDER BY x.id");
  s.bind(1, vm).bind(2, since);
  out->clear();
  while (s.step() == sql::kRow) {
    VmSession r;
    r.id = s.int64(0);
    r.tenant = static_cast<TenantId>(s.int64(1));
    r.vm = s.text(2);
    r.uuid = s.text(3);
    r.student_id = static_cast<uint32_t>(s.int64(4));
    r.started_at = s.int64(5);
    r.ended_at = s.int64(6);
    r.end_reason = s.text(7);
    r.gpu_ns = static_cast<uint64_t>(s.int64(8));
    out->push_back(std::move(r));
  }
  if (!s.finished()) return db_error();
  return {};
}

}  // namespace vgpu::policy
