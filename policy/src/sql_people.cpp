// The SQLite store: users (who may change things), courses, students and the
// VMs bound to them.
#include "sql_store.h"

namespace vgpu::policy {
namespace {

std::string role_text(Role r) { return std::string(role_name(r)); }

}  // namespace

Result SqlStore::find_course(const std::string& name, Course* out) {
  sql::Stmt s(db_,
              "SELECT id, name, coalesce(teacher_id, 0) FROM courses "
              "WHERE name = ?1 AND removed_at IS NULL");
  s.bind(1, name);
  if (const int rc = s.step(); rc != sql::kRow) {
    return rc == sql::kDone ? Result::not_found("unknown course '" + name + "'") : db_error();
  }
  *out = {s.int64(0), s.text(1), s.int64(2)};
  return {};
}

Result SqlStore::find_student(const std::string& name, Student* out) {
  sql::Stmt s(db_,
              "SELECT s.id, s.name, c.id, c.name, coalesce(c.teacher_id, 0) FROM students s "
              "JOIN courses c ON c.id = s.course_id WHERE s.name = ?1 AND s.removed_at IS NULL");
  s.bind(1, name);
  if (const int rc = s.step(); rc != sql::kRow) {
    return rc == sql::kDone ? Result::not_found("unknown student '" + name + "'") : db_error();
  }
  *out = {s.int64(0), s.text(1), {s.int64(2), s.text(3), s.int64(4)}};
  return {};
}

Result SqlStore::may_manage(const Actor& by, const Course& c) const {
  if (by.role == Role::kAdmin) return {};
  if (by.user_id != 0 && c.teacher_id == by.user_id) return {};
  return Result::permission_denied("permission denied: course '" + c.name + "' is not one of " +
                                   by.name + "'s courses");
}

// --- users ------------------------------------------------------------------------

Result SqlStore::actor_for_uid(uint32_t uid, Actor* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_, "SELECT id, name, role FROM users WHERE uid = ?1");
  s.bind(1, static_cast<int64_t>(uid));
  if (s.step() != sql::kRow) {
    return Result::permission_denied(
        "uid " + std::to_string(uid) +
        " is not a vgpu admin or teacher (an admin adds it with `vgpuctl user add NAME --uid " +
        std::to_string(uid) + "`)");
  }
  out->uid = uid;
  out->user_id = s.int64(0);
  out->name = s.text(1);
  out->role = s.text(2) == "admin" ? Role::kAdmin : Role::kTeacher;
  return {};
}

Result SqlStore::add_user(const Actor& by, const UserRow& user) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  if (by.role != Role::kAdmin) {
    return Result::permission_denied("permission denied: only admins add users");
  }
  if (!valid_name(user.name)) {
    return Result::invalid_argument(bad_name("user", user.name));
  }
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  sql::Stmt dup(db_, "SELECT name FROM users WHERE name = ?1 OR uid = ?2");
  dup.bind(1, user.name).bind(2, static_cast<int64_t>(user.uid));
  if (dup.step() == sql::kRow) {
    return Result::already_exists("user '" + dup.text(0) +
                                  "' already exists with that name or uid");
  }
  sql::Stmt ins(db_, "INSERT INTO users(name, uid, role, created_at) VALUES(?1, ?2, ?3, ?4)");
  ins.bind(1, user.name).bind(2, static_cast<int64_t>(user.uid)).bind(3, role_text(user.role));
  ins.bind(4, unix_now());
  if (ins.step() != sql::kDone ||
      !audit(by, "user.add", "user " + user.name, 0, "",
             "uid=" + std::to_string(user.uid) + " role=" + role_text(user.role)) ||
      !tx.commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::remove_user(const Actor& by, const std::string& name) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  if (by.role != Role::kAdmin) {
    return Result::permission_denied("permission denied: only admins remove users");
  }
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  sql::Stmt find(db_, "SELECT id, uid, role FROM users WHERE name = ?1");
  find.bind(1, name);
  if (find.step() != sql::kRow) {
    return Result::not_found("unknown user '" + name + "'");
  }
  const int64_t id = find.int64(0);
  const std::string old = "uid=" + std::to_string(find.int64(1)) + " role=" + find.text(2);
  // Their courses stay, run by admins until one gives them a new teacher.
  sql::Stmt orphan(db_, "UPDATE courses SET teacher_id = NULL WHERE teacher_id = ?1");
  orphan.bind(1, id);
  sql::Stmt del(db_, "DELETE FROM users WHERE id = ?1");
  del.bind(1, id);
  if (orphan.step() != sql::kDone || del.step() != sql::kDone ||
      !audit(by, "user.remove", "user " + name, 0, old, "") || !tx.commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::list_users(const Actor& by, std::vector<UserRow>* out) {
  std::lock_guard lock(mu_);
  if (by.role != Role::kAdmin) {
    return Result::permission_denied("permission denied: only admins list users");
  }
  sql::Stmt s(db_, "SELECT id, name, uid, role, created_at FROM users ORDER BY name");
  out->clear();
  while (s.step() == sql::kRow) {
    out->push_back({s.int64(0), s.text(1), static_cast<uint32_t>(s.int64(2)),
                    s.text(3) == "admin" ? Role::kAdmin : Role::kTeacher, s.int64(4)});
  }
  if (!s.finished()) return db_error();
  return {};
}

// --- courses ----------------------------------------------------------------------

Result SqlStore::create_course(const Actor& by, const CourseSpec& spec) {
  const std::string& name = spec.name;
  const std::string& teacher = spec.teacher;
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  if (!valid_name(name)) {
    return Result::invalid_argument(bad_name("course", name));
  }
  TimeZone zone;
  if (!spec.time_zone.empty()) {
    if (Result r = TimeZone::find(spec.time_zone, &zone); !r.ok()) return r;
  }
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  int64_t teacher_id = by.role == Role::kTeacher ? by.user_id : 0;
  if (!teacher.empty()) {
    sql::Stmt t(db_, "SELECT id FROM users WHERE name = ?1");
    t.bind(1, teacher);
    if (t.step() != sql::kRow) {
      return Result::not_found("unknown user '" + teacher +
                               "' (add teachers with `vgpuctl user add`)");
    }
    if (by.role != Role::kAdmin && t.int64(0) != by.user_id) {
      return Result::permission_denied(
          "permission denied: teachers create courses for themselves only");
    }
    teacher_id = t.int64(0);
  }
  Course existing;
  if (find_course(name, &existing).ok()) {
    return Result::already_exists("course '" + name + "' already exists");
  }
  sql::Stmt ins(db_,
                "INSERT INTO courses(name, teacher_id, created_at, time_zone) "
                "VALUES(?1, ?2, ?3, ?4)");
  ins.bind(1, name).bind(3, unix_now()).bind(4, zone.name());
  if (teacher_id)
    ins.bind(2, teacher_id);
  else
    ins.bind_null(2);
  std::string created =
      teacher.empty() ? (teacher_id ? "teacher=" + by.name : "") : "teacher=" + teacher;
  if (!zone.is_utc()) created += (created.empty() ? "tz=" : " tz=") + zone.name();
  if (ins.step() != sql::kDone ||
      !audit(by, "course.create", "course " + name, db_.last_insert_id(), "", created) ||
      !tx.commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::delete_course(const Actor& by, const std::string& name, bool force) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  Course c;
  if (Result r = find_course(name, &c); !r.ok()) return r;
  if (Result r = may_manage(by, c); !r.ok()) return r;
  sql::Stmt count(db_, "SELECT count(*) FROM students WHERE course_id = ?1 AND removed_at IS NULL");
  count.bind(1, c.id);
  const int64_t students = count.step() == sql::kRow ? count.int64(0) : 0;
  if (students > 0 && !force) {
    return Result::conflict("course '" + name + "' has " + std::to_string(students) +
                            " student(s): remove them first, or delete with --force");
  }
  const int64_t now = unix_now();
  sql::Stmt unbind(db_,
                   "UPDATE vms SET student_id = NULL WHERE student_id IN "
                   "(SELECT id FROM students WHERE course_id = ?1)");
  unbind.bind(1, c.id);
  sql::Stmt drop_students(db_,
                          "UPDATE students SET removed_at = ?2 "
                          "WHERE course_id = ?1 AND removed_at IS NULL");
  drop_students.bind(1, c.id).bind(2, now);
  sql::Stmt drop(db_, "UPDATE courses SET removed_at = ?2 WHERE id = ?1");
  drop.bind(1, c.id).bind(2, now);
  if (unbind.step() != sql::kDone || drop_students.step() != sql::kDone ||
      drop.step() != sql::kDone ||
      !audit(by, "course.delete", "course " + name, c.id, "students=" + std::to_string(students),
             "") ||
      !tx.commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::set_course_time_zone(const Actor& by, const std::string& course,
                                      const std::string& time_zone) {
  TimeZone zone;
  if (Result r = TimeZone::find(time_zone, &zone); !r.ok()) return r;
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  Course c;
  if (Result r = find_course(course, &c); !r.ok()) return r;
  if (Result r = may_manage(by, c); !r.ok()) return r;
  sql::Stmt cur(db_, "SELECT time_zone FROM courses WHERE id = ?1");
  cur.bind(1, c.id);
  const std::string old = cur.step() == sql::kRow ? cur.text(0) : "UTC";
  if (old == zone.name()) return {};  // nothing to change, nothing to audit
  sql::Stmt up(db_, "UPDATE courses SET time_zone = ?2 WHERE id = ?1");
  up.bind(1, c.id).bind(2, zone.name());
  if (up.step() != sql::kDone ||
      !audit(by, "course.set", "course " + course, c.id, "tz=" + old, "tz=" + zone.name()) ||
      !tx.commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::list_courses(const Actor& by, std::vector<CourseRow>* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_,
              "SELECT c.id, c.name, coalesce(u.name, ''), c.created_at, "
              "(SELECT count(*) FROM students s "
              "WHERE s.course_id = c.id AND s.removed_at IS NULL), "
              "c.time_zone FROM courses c LEFT JOIN users u ON u.id = c.teacher_id "
              "WHERE c.removed_at IS NULL AND (?1 = 0 OR c.teacher_id = ?1) ORDER BY c.name");
  s.bind(1, by.role == Role::kAdmin ? int64_t{0} : (by.user_id > 0 ? by.user_id : int64_t{-1}));
  out->clear();
  while (s.step() == sql::kRow) {
    out->push_back({s.int64(0), s.text(1), s.text(2), s.int64(3), 0, s.int64(4), s.text(5)});
  }
  if (!s.finished()) return db_error();
  return {};
}

// --- students and VMs -----------------------------------------------------------

Result SqlStore::bind_locked(const Actor& by, const Student& s, const std::string& vm) {
  if (!valid_name(vm)) return Result::invalid_argument(bad_name("VM", vm));
  sql::Stmt cur(db_,
                "SELECT coalesce(s.name, '') FROM vms v LEFT JOIN students s "
                "ON s.id = v.student_id WHERE v.name = ?1");
  cur.bind(1, vm);
  if (cur.step() == sql::kRow && !cur.text(0).empty()) {
    if (cur.text(0) == s.name) {
      return Result::already_exists("VM '" + vm + "' is already bound to " + s.name);
    }
    return Result::conflict("VM '" + vm + "' is bound to student '" + cur.text(0) +
                            "': unbind it first");
  }
  // A VM not seen yet is recorded now; it gets its first_seen when it connects.
  sql::Stmt up(db_,
               "INSERT INTO vms(name, first_seen, last_seen, student_id) VALUES(?1, 0, 0, ?2) "
               "ON CONFLICT(name) DO UPDATE SET student_id = ?2");
  up.bind(1, vm).bind(2, s.id);
  if (up.step() != sql::kDone ||
      !audit(by, "vm.bind", "vm " + vm, s.course.id, "(unassigned)", "student=" + s.name)) {
    return db_error();
  }
  return {};
}

bool SqlStore::unbind_students_vms(int64_t student_id) {
  sql::Stmt s(db_, "UPDATE vms SET student_id = NULL WHERE student_id = ?1");
  s.bind(1, student_id);
  return s.step() == sql::kDone;
}

Result SqlStore::insert_student_locked(const Actor& by, const std::string& name,
                                       const Course& course, Student* out) {
  if (!valid_name(name)) {
    return Result::invalid_argument(bad_name("student", name));
  }
  Student existing;
  if (find_student(name, &existing).ok()) {
    return Result::already_exists("student '" + name + "' already exists (in course '" +
                                  existing.course.name + "')");
  }
  sql::Stmt ins(db_, "INSERT INTO students(name, course_id, created_at) VALUES(?1, ?2, ?3)");
  ins.bind(1, name).bind(2, course.id).bind(3, unix_now());
  if (ins.step() != sql::kDone) {
    return db_error();
  }
  *out = {db_.last_insert_id(), name, course};
  if (!audit(by, "student.add", "student " + name, course.id, "", "course=" + course.name)) {
    return db_error();
  }
  return {};
}

Result SqlStore::add_student(const Actor& by, const std::string& name, const std::string& course,
                             const std::vector<std::string>& vms) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  if (!valid_name(name)) {
    return Result::invalid_argument(bad_name("student", name));
  }
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  Course c;
  if (Result r = find_course(course, &c); !r.ok()) return r;
  if (Result r = may_manage(by, c); !r.ok()) return r;
  Student s;
  if (Result r = insert_student_locked(by, name, c, &s); !r.ok()) return r;
  for (const std::string& vm : vms) {
    if (Result r = bind_locked(by, s, vm); !r.ok()) return r;
  }
  if (!tx.commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::begin_student_change(const Actor& by, const std::string& name,
                                      std::optional<sql::Transaction>* tx, Student* s) {
  if (Result r = writable(); !r.ok()) return r;
  tx->emplace(db_);
  if (!(*tx)->began()) return not_begun();
  if (Result r = find_student(name, s); !r.ok()) return r;
  if (Result r = may_manage(by, s->course); !r.ok()) return r;
  return {};
}

Result SqlStore::remove_student(const Actor& by, const std::string& name) {
  std::lock_guard lock(mu_);
  std::optional<sql::Transaction> tx;
  Student s;
  if (Result r = begin_student_change(by, name, &tx, &s); !r.ok()) return r;
  sql::Stmt drop(db_, "UPDATE students SET removed_at = ?2 WHERE id = ?1");
  drop.bind(1, s.id).bind(2, unix_now());
  if (!unbind_students_vms(s.id) || drop.step() != sql::kDone ||
      !audit(by, "student.remove", "student " + name, s.course.id, "course=" + s.course.name, "") ||
      !tx->commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::bind_vm(const Actor& by, const std::string& student, const std::string& vm) {
  std::lock_guard lock(mu_);
  std::optional<sql::Transaction> tx;
  Student s;
  if (Result r = begin_student_change(by, student, &tx, &s); !r.ok()) return r;
  if (Result r = bind_locked(by, s, vm); !r.ok()) return r;
  if (!tx->commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::unbind_vm(const Actor& by, const std::string& vm) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  sql::Stmt cur(db_,
                "SELECT coalesce(s.name, '') FROM vms v LEFT JOIN students s "
                "ON s.id = v.student_id WHERE v.name = ?1");
  cur.bind(1, vm);
  if (cur.step() != sql::kRow || cur.text(0).empty()) {
    return Result::conflict("VM '" + vm + "' is not bound to a student");
  }
  Student s;
  if (Result r = find_student(cur.text(0), &s); !r.ok()) return r;
  if (Result r = may_manage(by, s.course); !r.ok()) return r;
  sql::Stmt up(db_, "UPDATE vms SET student_id = NULL WHERE name = ?1");
  up.bind(1, vm);
  if (up.step() != sql::kDone ||
      !audit(by, "vm.unbind", "vm " + vm, s.course.id, "student=" + s.name, "(unassigned)") ||
      !tx.commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::write_uid_locked(const Actor& by, const Student& s, std::optional<uint32_t> uid) {
  sql::Stmt cur(db_, "SELECT coalesce(uid, -1) FROM students WHERE id = ?1");
  cur.bind(1, s.id);
  const int64_t old = cur.step() == sql::kRow ? cur.int64(0) : -1;
  auto text = [](int64_t u) { return u < 0 ? std::string("(none)") : "uid=" + std::to_string(u); };
  sql::Stmt up(db_, "UPDATE students SET uid = ?2 WHERE id = ?1");
  up.bind(1, s.id);
  if (uid) {
    up.bind(2, static_cast<int64_t>(*uid));
  } else {
    up.bind_null(2);
  }
  const int64_t now = uid ? static_cast<int64_t>(*uid) : -1;
  if (up.step() != sql::kDone ||
      !audit(by, "student.uid", "student " + s.name, s.course.id, text(old), text(now))) {
    return db_error();
  }
  return {};
}

Result SqlStore::set_student_uid(const Actor& by, const std::string& student,
                                 std::optional<uint32_t> uid) {
  std::lock_guard lock(mu_);
  std::optional<sql::Transaction> tx;
  Student s;
  if (Result r = begin_student_change(by, student, &tx, &s); !r.ok()) return r;
  if (Result r = write_uid_locked(by, s, uid); !r.ok()) return r;
  if (!tx->commit()) {
    return db_error();
  }
  return {};
}

Result SqlStore::list_students(const Actor& by, const std::string& course, bool include_removed,
                               std::vector<StudentRow>* out) {
  std::lock_guard lock(mu_);
  int64_t course_id = 0;
  if (!course.empty()) {
    Course c;
    if (Result r = find_course(course, &c); !r.ok()) return r;
    if (Result r = may_manage(by, c); !r.ok()) return r;
    course_id = c.id;
  }
  sql::Stmt s(db_,
              "SELECT s.id, s.name, c.id, c.name, s.created_at, coalesce(s.removed_at, 0), "
              "coalesce(s.uid, -1), c.time_zone FROM students s "
              "JOIN courses c ON c.id = s.course_id "
              "WHERE (?1 = 0 OR c.id = ?1) AND (?2 = 0 OR c.teacher_id = ?2) "
              "AND (?3 <> 0 OR s.removed_at IS NULL) ORDER BY c.name, s.name, s.id");
  s.bind(1, course_id);
  s.bind(2, by.role == Role::kAdmin ? int64_t{0} : (by.user_id > 0 ? by.user_id : int64_t{-1}));
  s.bind(3, int64_t{include_removed ? 1 : 0});
  out->clear();
  while (s.step() == sql::kRow) {
    StudentRow r;
    r.id = s.int64(0);
    r.name = s.text(1);
    r.course_id = s.int64(2);
    r.course = s.text(3);
    r.created_at = s.int64(4);
    r.removed_at = s.int64(5);
    r.uid = s.int64(6);
    r.time_zone = s.text(7);
    out->push_back(std::move(r));
  }
  if (!s.finished()) return db_error();
  sql::Stmt vms(db_, "SELECT name FROM vms WHERE student_id = ?1 ORDER BY name");
  for (StudentRow& r : *out) {
    vms.bind(1, r.id);
    while (vms.step() == sql::kRow) r.vms.push_back(vms.text(0));
    if (!vms.finished()) return db_error();
    vms.reset();
  }
  return {};
}

}  // namespace vgpu::policy
