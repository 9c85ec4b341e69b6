// The SQLite store: a class roster imported in one transaction. Each row
// goes through the same writes as `student add`, `student uid` and `quota
// set` (and their audit rows), inside a savepoint, so a refused row leaves
// nothing behind and the others can still be kept (--partial).
#include <cstdlib>
#include <map>

#include "sql_store.h"
#include "vgpu/policy/units.h"

namespace vgpu::policy {
namespace {

// A row's fields other than its name and VM, parsed.
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

Result parse_fields(const RosterRow& r, RowFields* out) {
  if (!r.uid.empty()) {
    uint32_t uid = 0;
    if (!parse_uid(r.uid, &uid)) {
      return Result::invalid_argument("uid '" + r.uid + "' is not a number below 4294967295");
    }
    out->uid = uid;
  }
  if (!r.gpu_time.empty()) {
    GpuTime g;
    if (Result p = parse_gpu_time(r.gpu_time, &g); !p.ok()) return p.prefixed("gpu_time: ");
    out->quota.gpu_time = g;
  }
  if (!r.memory.empty()) {
    uint64_t bytes = 0;  // "none": no cap
    if (r.memory != "none") {
      if (Result p = parse_bytes(r.memory, &bytes); !p.ok()) return p.prefixed("memory: ");
    }
    out->quota.memory = bytes;
  }
  return valid_quota(out->quota);
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

}  // namespace

Result SqlStore::import_row_locked(const Actor& by, const Course& course, const RosterRow& row,
                                   const std::string& duplicate) {
  if (!duplicate.empty()) return Result::invalid_argument(duplicate);
  RowFields fields;
  if (Result r = parse_fields(row, &fields); !r.ok()) return r;
  if (std::string why; !db_.exec("SAVEPOINT roster_row", &why)) {
    return Result::storage("database error: " + why);
  }
  Student s;
  Result added = insert_student_locked(by, row.name, course, &s);
  if (added.ok() && !row.vm.empty()) added = bind_locked(by, s, row.vm);
  if (added.ok() && fields.uid) added = write_uid_locked(by, s, fields.uid);
  if (added.ok() && !fields.quota.empty()) {
    added = change_quota_locked(by, {QuotaTarget::Kind::kStudent, row.name}, "student", s.id,
                                course.id, fields.quota);
  }
  if (added.ok()) return db_.exec("RELEASE roster_row") ? Result() : db_error();
  std::string ignored;
  if (!db_.exec("ROLLBACK TO roster_row", &ignored) || !db_.exec("RELEASE roster_row", &ignored)) {
    return db_error();
  }
  return added;
}

Result SqlStore::import_students(const Actor& by, const std::string& course,
                                 std::span<const RosterRow> rows, ImportOptions options,
                                 std::vector<RosterOutcome>* out) {
  std::lock_guard lock(mu_);
  out->clear();
  if (Result r = writable(); !r.ok()) return r;
  if (rows.empty()) {
    return Result::invalid_argument("the roster names no students");
  }
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  Course c;
  if (Result r = find_course(course, &c); !r.ok()) return r;
  if (Result r = may_manage(by, c); !r.ok()) return r;

  const std::map<std::string, std::string> repeated = repeated_names(rows);
  size_t refused = 0;
  for (const RosterRow& row : rows) {
    RosterOutcome o{row.row, row.name, false, ""};
    auto dup = repeated.find(row.name);
    Result r = import_row_locked(by, c, row, dup == repeated.end() ? "" : dup->second);
    if (r.is(Result::Code::kStorage)) {  // the database failed: no row can be trusted
      out->clear();
      return r;
    }
    o.added = r.ok();
    o.why = r.message();
    refused += o.added ? 0 : 1;
    out->push_back(std::move(o));
  }

  const bool keep = refused == 0 || options.partial;
  if (!keep || options.dry_run) {
    for (RosterOutcome& o : *out) o.added = false;  // rolled back as `tx` goes
    if (!keep) {
      return Result::invalid_argument(std::to_string(refused) + " of " +
                                      std::to_string(rows.size()) +
                                      " roster rows refused; nothing was added");
    }
    return {};
  }
  if (!tx.commit()) {
    out->clear();
    return db_error();
  }
  return {};
}

}  // namespace vgpu::policy
