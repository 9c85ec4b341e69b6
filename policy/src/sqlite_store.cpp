// The SQLite store: opening, VMs and the usage ledger.
#include "sqlite_store.h"

#include <ctime>

#include "migrations.h"

namespace vgpu::policy {

int64_t unix_now() { return static_cast<int64_t>(std::time(nullptr)); }

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string bad_name(std::string_view what, std::string_view name) {
  return std::string(what) + " name '" + std::string(name) +
         "' is not valid (1 to 63 of A-Z a-z 0-9 . _ -)";
}

Result SqliteStore::open(const std::string& path, const StoreOptions& options) {
  read_only_ = options.read_only;
  std::string why;
  if (!read_only_) {
    if (!db_.open(path, &why) || !migrate(db_, &why)) return Result::storage(why);
    return {};
  }
  if (!db_.open_read_only(path, &why)) return Result::storage(why);
  sql::Stmt version(db_, "PRAGMA user_version");
  const int v = version.step() == SQLITE_ROW ? static_cast<int>(version.int64(0)) : -1;
  if (v < 0) return Result::storage("cannot read " + path + ": " + db_.error());
  if (v != latest_schema_version()) {
    return Result::conflict(path + " has schema version " + std::to_string(v) +
                            ", this vgpu reads " + std::to_string(latest_schema_version()) +
                            " (start vgpud once to migrate it)");
  }
  return {};
}

Result SqliteStore::writable() const {
  if (read_only_) return Result::read_only("the database was opened read-only");
  return {};
}

Result SqliteStore::db_error() const { return Result::storage("database error: " + db_.error()); }

Result SqliteStore::tenant_for_vm(const std::string& vm, TenantId* out) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  const int64_t now = unix_now();
  // A VM bound before it ever connected has first_seen 0 until it does.
  sql::Stmt up(db_,
               "INSERT INTO vms(name, first_seen, last_seen) VALUES(?1, ?2, ?2) "
               "ON CONFLICT(name) DO UPDATE SET last_seen = ?2, "
               "first_seen = CASE WHEN first_seen = 0 THEN ?2 ELSE first_seen END "
               "RETURNING tenant_id");
  up.bind(1, vm).bind(2, now);
  if (up.step() != SQLITE_ROW) return db_error();
  *out = static_cast<TenantId>(up.int64(0));
  return {};
}

Result SqliteStore::find_vm(const std::string& vm, TenantId* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_, "SELECT tenant_id FROM vms WHERE name = ?1");
  s.bind(1, vm);
  const int rc = s.step();
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_error();
  *out = rc == SQLITE_ROW ? static_cast<TenantId>(s.int64(0)) : 0;
  return {};
}

Result SqliteStore::vm_usable_by(const std::string& vm, uint32_t uid, bool* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_,
              "SELECT EXISTS(SELECT 1 FROM vms v JOIN students s ON s.id = v.student_id "
              "WHERE v.name = ?1 AND s.uid = ?2 AND s.removed_at IS NULL) "
              "OR EXISTS(SELECT 1 FROM users WHERE uid = ?2 AND role = 'admin')");
  s.bind(1, vm).bind(2, static_cast<int64_t>(uid));
  if (s.step() != SQLITE_ROW) return db_error();
  *out = s.int64(0) != 0;
  return {};
}

Result SqliteStore::list_vms(std::vector<VmRow>* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_,
              "SELECT v.tenant_id, v.name, v.first_seen, v.last_seen, coalesce(s.name, ''), "
              "coalesce(v.domain_uuid, '') "
              "FROM vms v LEFT JOIN students s ON s.id = v.student_id ORDER BY v.name");
  out->clear();
  while (s.step() == SQLITE_ROW) {
    out->push_back({static_cast<TenantId>(s.int64(0)), s.text(1), s.int64(2), s.int64(3),
                    s.text(4), s.text(5)});
  }
  return {};
}

Result SqliteStore::not_begun() const {
  return Result::busy(
      "the quota database cannot take a change now (another process may hold its write lock); "
      "nothing changed");
}

Result SqliteStore::record_usage(std::span<const UsageRecord> batch) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  sql::Stmt s(db_,
              "INSERT INTO usage(tenant_id, student_id, interval_start, gpu_ns, kernels, "
              "bytes_to_device, bytes_from_device, peak_memory) "
              "VALUES(?1, ?8, ?2, ?3, ?4, ?5, ?6, ?7) "
              "ON CONFLICT(tenant_id, student_id, interval_start) DO UPDATE SET "
              "gpu_ns = gpu_ns + ?3, kernels = kernels + ?4, "
              "bytes_to_device = bytes_to_device + ?5, "
              "bytes_from_device = bytes_from_device + ?6, "
              "peak_memory = max(peak_memory, ?7)");
  for (const UsageRecord& r : batch) {
    s.bind(1, static_cast<int64_t>(r.tenant)).bind(2, r.interval_start);
    s.bind(3, static_cast<int64_t>(r.gpu_ns)).bind(4, static_cast<int64_t>(r.kernels));
    s.bind(5, static_cast<int64_t>(r.bytes_to_device));
    s.bind(6, static_cast<int64_t>(r.bytes_from_device));
    s.bind(7, static_cast<int64_t>(r.peak_memory));
    s.bind(8, static_cast<int64_t>(r.student));
    if (s.step() != SQLITE_DONE) return db_error();
    s.reset();
  }
  return tx.commit() ? Result() : db_error();
}

namespace {

UsageRecord read_usage(const sql::Stmt& s) {
  UsageRecord r;
  r.tenant = static_cast<TenantId>(s.int64(0));
  r.interval_start = s.int64(1);
  r.gpu_ns = static_cast<uint64_t>(s.int64(2));
  r.kernels = static_cast<uint64_t>(s.int64(3));
  r.bytes_to_device = static_cast<uint64_t>(s.int64(4));
  r.bytes_from_device = static_cast<uint64_t>(s.int64(5));
  r.peak_memory = static_cast<uint64_t>(s.int64(6));
  r.student = static_cast<uint32_t>(s.int64(7));
  return r;
}

}  // namespace

Result SqliteStore::usage_between(int64_t since, int64_t until, std::vector<UsageRecord>* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_,
              "SELECT tenant_id, min(interval_start), sum(gpu_ns), sum(kernels), "
              "sum(bytes_to_device), sum(bytes_from_device), max(peak_memory), 0 FROM usage "
              "WHERE interval_start >= ?1 AND interval_start < ?2 GROUP BY tenant_id "
              "ORDER BY tenant_id");
  s.bind(1, since).bind(2, until);
  out->clear();
  while (s.step() == SQLITE_ROW) out->push_back(read_usage(s));
  return {};
}

Result SqliteStore::usage_rows(int64_t since, int64_t until, std::vector<UsageRecord>* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_,
              "SELECT tenant_id, interval_start, gpu_ns, kernels, bytes_to_device, "
              "bytes_from_device, peak_memory, student_id FROM usage "
              "WHERE interval_start >= ?1 AND interval_start < ?2 "
              "ORDER BY interval_start, tenant_id, student_id");
  s.bind(1, since).bind(2, until);
  out->clear();
  while (s.step() == SQLITE_ROW) out->push_back(read_usage(s));
  return {};
}

Result SqliteStore::ledger_sum(uint32_t student, TenantId tenant, int64_t since, int64_t until,
                               int64_t* gpu_ns) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_, student != 0
                       ? "SELECT coalesce(sum(gpu_ns), 0) FROM usage WHERE student_id = ?1 "
                         "AND interval_start >= ?3 AND interval_start < ?4"
                       : "SELECT coalesce(sum(gpu_ns), 0) FROM usage WHERE student_id = 0 "
                         "AND tenant_id = ?2 AND interval_start >= ?3 AND interval_start < ?4");
  s.bind(1, static_cast<int64_t>(student)).bind(2, static_cast<int64_t>(tenant));
  s.bind(3, since).bind(4, until);
  if (s.step() != SQLITE_ROW) return db_error();
  *gpu_ns = s.int64(0);
  return {};
}

int SqliteStore::schema_version() {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_, "PRAGMA user_version");
  return s.step() == SQLITE_ROW ? static_cast<int>(s.int64(0)) : -1;
}

Result open_sqlite_store(const std::string& path, std::unique_ptr<Store>* out,
                         StoreOptions options) {
  auto store = std::make_unique<SqliteStore>();
  if (Result r = store->open(path, options); !r.ok()) return r;
  *out = std::move(store);
  return {};
}

}  // namespace vgpu::policy
