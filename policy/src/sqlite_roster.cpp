// The SQLite store: a class roster imported in one transaction. Each row
// goes through the same writes as `student add`, `student uid` and `quota
// set` (and their audit rows), inside a savepoint, so a refused row leaves
// nothing behind and the others can still be kept (--partial).
#include <cstdlib>
#include <map>

#include "sqlite_store.h"
#include "vgpu/policy/units.h"

namespace vgpu::policy {
namespace {

// A row's fields other than its name and VM, parsed; false with `why`.
struct RowFields {
  std::optional<uint32_t> uid;
  QuotaFields quota;
};

// A uid: digits only, below (uid_t)-1, which means none to the kernel.
bool parse_uid(const std::string& text, uint32_t* out) {
  if (text.empty() || text.size() > 10 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (v >= UINT32_MAX) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

bool parse_fields(const RosterRow& r, RowFields* out, std::string* why) {
  if (!r.uid.empty()) {
    uint32_t uid = 0;
    if (!parse_uid(r.uid, &uid)) {
      *why = "uid '" + r.uid + "' is not a number below 4294967295";
      return false;
    }
    out->uid = uid;
  }
  if (!r.gpu_time.empty()) {
    GpuTime g;
    std::string reason;
    if (!parse_gpu_time(r.gpu_time, &g, &reason)) {
      *why = "gpu_time: " + reason;
      return false;
    }
    out->quota.gpu_time = g;
  }
  if (!r.memory.empty()) {
    uint64_t bytes = 0;  // "none": no cap
    std::string reason;
    if (r.memory != "none" && !parse_bytes(r.memory, &bytes, &reason)) {
      *why = "memory: " + reason;
      return false;
    }
    out->quota.memory = bytes;
  }
  return valid_quota(out->quota, why);
}

// "student 'x' is on rows 3 and 9" for each name on more than one row: all
// of those rows are refused, since which one was meant cannot be told.
std::map<std::string, std::string> repeated_names(std::span<const RosterRow> rows) {
  std::map<std::string, std::vector<int>> where;
  for (const RosterRow& r : rows) where[r.name].push_back(r.row);
  std::map<std::string, std::string> out;
  for (const auto& [name, at] : where) {
    if (at.size() < 2) continue;
    std::string list;
    for (size_t i = 0; i < at.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == at.size() ? " and " : ", ") + std::to_string(at[i]);
    }
    out[name] = "student '" + name + "' is on rows " + list + " of the roster";
  }
  return out;
}

bool is_database_error(const std::string& why) { return why.starts_with("database error"); }

}  // namespace

bool SqliteStore::import_row_locked(const Actor& by, const Course& course, const RosterRow& row,
                                    const std::string& duplicate, std::string* why) {
  if (!duplicate.empty()) {
    *why = duplicate;
    return false;
  }
  RowFields fields;
  if (!parse_fields(row, &fields, why)) return false;
  if (!db_.exec("SAVEPOINT roster_row", why)) {
    *why = "database error: " + *why;
    return false;
  }
  Student s;
  const bool added =
      ok(insert_student_locked(by, row.name, course, &s, why)) &&
      (row.vm.empty() || bind_locked(by, s, row.vm, why)) &&
      (!fields.uid || write_uid_locked(by, s, fields.uid, why)) &&
      (fields.quota.empty() || change_quota_locked(by, {QuotaTarget::Kind::kStudent, row.name},
                                                   "student", s.id, course.id, fields.quota, why));
  if (added) {
    if (db_.exec("RELEASE roster_row")) return true;
    *why = "database error: " + db_.error();
    return false;
  }
  std::string ignored;
  if (!db_.exec("ROLLBACK TO roster_row", &ignored) || !db_.exec("RELEASE roster_row", &ignored)) {
    *why = "database error: " + db_.error();
  }
  return false;
}

Status SqliteStore::import_students(const Actor& by, const std::string& course,
                                    std::span<const RosterRow> rows, ImportOptions options,
                                    std::vector<RosterOutcome>* out, std::string* why) {
  std::lock_guard lock(mu_);
  out->clear();
  if (!writable(why)) return Status::kNotPermitted;
  if (rows.empty()) {
    *why = "the roster names no students";
    return Status::kInvalidValue;
  }
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun(why);
  Course c;
  if (!find_course(course, &c, why)) return Status::kInvalidValue;
  if (!may_manage(by, c, why)) return Status::kNotPermitted;

  const std::map<std::string, std::string> repeated = repeated_names(rows);
  size_t refused = 0;
  for (const RosterRow& row : rows) {
    RosterOutcome o{row.row, row.name, false, ""};
    auto dup = repeated.find(row.name);
    o.added = import_row_locked(by, c, row, dup == repeated.end() ? "" : dup->second, &o.why);
    if (!o.added && is_database_error(o.why)) {
      *why = o.why;
      out->clear();
      return Status::kUnknown;
    }
    refused += o.added ? 0 : 1;
    out->push_back(std::move(o));
  }

  const bool keep = refused == 0 || options.partial;
  if (!keep || options.dry_run) {
    for (RosterOutcome& o : *out) o.added = false;  // rolled back as `tx` goes
    if (!keep) {
      *why = std::to_string(refused) + " of " + std::to_string(rows.size()) +
             " roster rows refused; nothing was added";
      return Status::kInvalidValue;
    }
    return Status::kSuccess;
  }
  if (!tx.commit()) {
    *why = "database error: " + db_.error();
    out->clear();
    return Status::kUnknown;
  }
  return Status::kSuccess;
}

}  // namespace vgpu::policy
