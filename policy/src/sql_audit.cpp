// The SQLite store: the audit log. Every change writes one row in the same
// transaction as the change, so the log and the data never disagree.
#include "sql_store.h"

namespace vgpu::policy {

bool SqlStore::audit(const Actor& by, std::string_view action, const std::string& object,
                     int64_t course_id, const std::string& old_value,
                     const std::string& new_value) {
  sql::Stmt s(db_,
              "INSERT INTO audit(at, uid, actor, action, object, course_id, old_value, new_value) "
              "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  s.bind(1, unix_now()).bind(2, static_cast<int64_t>(by.uid)).bind(3, by.name);
  s.bind(4, action).bind(5, object);
  if (course_id)
    s.bind(6, course_id);
  else
    s.bind_null(6);
  s.bind(7, old_value).bind(8, new_value);
  return s.step() == sql::kDone;
}

Result SqlStore::audit_log(const Actor& by, int64_t since, std::vector<AuditRow>* out) {
  std::lock_guard lock(mu_);
  // Teachers see what touched their courses, and what they did themselves.
  sql::Stmt s(db_,
              "SELECT id, at, uid, actor, action, object, old_value, new_value FROM audit "
              "WHERE at >= ?1 AND (?2 = 0 OR uid = ?3 OR course_id IN "
              "(SELECT id FROM courses WHERE teacher_id = ?2)) ORDER BY id");
  s.bind(1, since);
  s.bind(2, by.role == Role::kAdmin ? int64_t{0} : (by.user_id > 0 ? by.user_id : int64_t{-1}));
  s.bind(3, static_cast<int64_t>(by.uid));
  out->clear();
  while (s.step() == sql::kRow) {
    out->push_back({s.int64(0), s.int64(1), static_cast<uint32_t>(s.int64(2)), s.text(3), s.text(4),
                    s.text(5), s.text(6), s.text(7)});
  }
  if (!s.finished()) return db_error();
  return {};
}

}  // namespace vgpu::policy
