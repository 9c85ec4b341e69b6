// The SQL store: opening, VMs and the usage ledger.
#include "sql_store.h"

#include <algorithm>
#include <ctime>

#include "migrations.h"
#include "vgpu/policy/units.h"

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

Result SqlStore::open(const std::string& location, bool postgres, const StoreOptions& options) {
  read_only_ = options.read_only;
  std::string why;
  const bool opened = postgres      ? db_.open_postgres(location, read_only_, &why)
                      : !read_only_ ? db_.open(location, &why)
                                    : db_.open_read_only(location, &why);
  if (!opened) return Result::storage(why);
  if (!read_only_) return migrate(db_, &why) ? Result() : Result::storage(why);
  const std::string name = postgres ? "the PostgreSQL database" : location;
  const int v = db_.schema_version();
  if (v < 0) return Result::storage("cannot read " + name + ": " + db_.error());
  if (v != latest_schema_version()) {
    return Result::conflict(name + " has schema version " + std::to_string(v) +
                            ", this vgpu reads " + std::to_string(latest_schema_version()) +
                            " (start vgpud once to migrate it)");
  }
  return {};
}

Result SqlStore::writable() const {
  if (read_only_) return Result::read_only("the database was opened read-only");
  return {};
}

Result SqlStore::db_error() const { return Result::storage("database error: " + db_.error()); }

Result SqlStore::batch_error() const {
  if (!db_.refused()) return db_error();
  return Result::conflict("the database refuses this usage batch: " + db_.error());
}

Result SqlStore::tenant_for_vm(const std::string& vm, TenantId* out) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  const int64_t now = unix_now();
  // A VM bound before it ever connected has first_seen 0 until it does.
  sql::Stmt up(db_,
               "INSERT INTO vms(name, first_seen, last_seen) VALUES(?1, ?2, ?2) "
               "ON CONFLICT(name) DO UPDATE SET last_seen = ?2, "
               "first_seen = CASE WHEN vms.first_seen = 0 THEN ?2 ELSE vms.first_seen END "
               "RETURNING tenant_id");
  up.bind(1, vm).bind(2, now);
  if (up.step() != sql::kRow) return db_error();
  *out = static_cast<TenantId>(up.int64(0));
  return {};
}

Result SqlStore::find_vm(const std::string& vm, TenantId* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_, "SELECT tenant_id FROM vms WHERE name = ?1");
  s.bind(1, vm);
  const int rc = s.step();
  if (rc != sql::kRow && rc != sql::kDone) return db_error();
  *out = rc == sql::kRow ? static_cast<TenantId>(s.int64(0)) : 0;
  return {};
}

Result SqlStore::vm_usable_by(const std::string& vm, uint32_t uid, bool* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_,
              "SELECT EXISTS(SELECT 1 FROM vms v JOIN students s ON s.id = v.student_id "
              "WHERE v.name = ?1 AND s.uid = ?2 AND s.removed_at IS NULL) "
              "OR EXISTS(SELECT 1 FROM users WHERE uid = ?2 AND role = 'admin')");
  s.bind(1, vm).bind(2, static_cast<int64_t>(uid));
  if (s.step() != sql::kRow) return db_error();
  *out = s.int64(0) != 0;
  return {};
}

Result SqlStore::list_vms(std::vector<VmRow>* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_,
              "SELECT v.tenant_id, v.name, v.first_seen, v.last_seen, coalesce(s.name, ''), "
              "coalesce(v.domain_uuid, ''), coalesce(v.placement, '') "
              "FROM vms v LEFT JOIN students s ON s.id = v.student_id ORDER BY v.name");
  out->clear();
  while (s.step() == sql::kRow) {
    out->push_back({static_cast<TenantId>(s.int64(0)), s.text(1), s.int64(2), s.int64(3), s.text(4),
                    s.text(5), std::nullopt});
    if (Placement p; !s.text(6).empty() && parse_placement(s.text(6), &p).ok()) {
      out->back().placement = p;
    }
  }
  if (!s.finished()) return db_error();
  return {};
}

Result SqlStore::not_begun() const {
  return Result::busy(
      "the quota database cannot take a change now (another process may hold its write lock); "
      "nothing changed");
}

Result SqlStore::record_usage(std::span<const UsageRecord> batch) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  if (!insert_usage_locked(batch)) return db_error();
  return tx.commit() ? Result() : db_error();
}

Result SqlStore::record_host_usage(const std::string& host, int64_t seq,
                                   std::span<const UsageRecord> batch, bool* applied) {
  std::lock_guard lock(mu_);
  *applied = false;
  if (Result r = writable(); !r.ok()) return r;
  if (!valid_host_name(host)) return Result::invalid_argument(bad_name("host", host));
  sql::Transaction tx(db_);
  if (!tx.began()) return not_begun();
  int64_t last = 0;
  if (!last_seq_locked(host, &last)) return db_error();
  if (last >= seq) return {};  // applied before
  sql::Stmt mark(db_,
                 "INSERT INTO host_batches(host, last_seq) VALUES(?1, ?2) "
                 "ON CONFLICT(host) DO UPDATE SET last_seq = ?2");
  mark.bind(1, host).bind(2, seq);
  if (mark.step() != sql::kDone || !insert_usage_locked(batch) || !tx.commit()) {
    return batch_error();
  }
  *applied = true;
  return {};
}

Result SqlStore::last_host_batch(const std::string& host, int64_t* seq) {
  std::lock_guard lock(mu_);
  return last_seq_locked(host, seq) ? Result() : db_error();
}

bool SqlStore::last_seq_locked(const std::string& host, int64_t* seq) {
  sql::Stmt s(db_, "SELECT last_seq FROM host_batches WHERE host = ?1");
  s.bind(1, host);
  const int rc = s.step();
  *seq = rc == sql::kRow ? s.int64(0) : 0;
  return rc == sql::kRow || rc == sql::kDone;
}

bool SqlStore::insert_usage_locked(std::span<const UsageRecord> batch) {
  sql::Stmt s(db_,
              "INSERT INTO usage(tenant_id, student_id, interval_start, gpu_ns, kernels, "
              "bytes_to_device, bytes_from_device, peak_memory, host, gpu) "
              "VALUES(?1, ?8, ?2, ?3, ?4, ?5, ?6, ?7, ?9, ?10) "
              "ON CONFLICT(tenant_id, student_id, interval_start, host, gpu) DO UPDATE SET "
              "gpu_ns = usage.gpu_ns + ?3, kernels = usage.kernels + ?4, "
              "bytes_to_device = usage.bytes_to_device + ?5, "
              "bytes_from_device = usage.bytes_from_device + ?6, "
              "peak_memory = CASE WHEN usage.peak_memory > ?7 THEN usage.peak_memory ELSE ?7 END");
  for (const UsageRecord& r : batch) {
    s.bind(1, static_cast<int64_t>(r.tenant)).bind(2, r.interval_start);
    s.bind(3, static_cast<int64_t>(r.gpu_ns)).bind(4, static_cast<int64_t>(r.kernels));
    s.bind(5, static_cast<int64_t>(r.bytes_to_device));
    s.bind(6, static_cast<int64_t>(r.bytes_from_device));
    s.bind(7, static_cast<int64_t>(r.peak_memory));
    s.bind(8, static_cast<int64_t>(r.student));
    s.bind(9, r.host).bind(10, static_cast<int64_t>(r.gpu));
    if (s.step() != sql::kDone) return false;
    s.reset();
  }
  return true;
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
  r.host = s.text(8);
  r.gpu = static_cast<uint32_t>(s.int64(9));
  return r;
}

}  // namespace

Result SqlStore::usage_between(int64_t since, int64_t until, std::vector<UsageRecord>* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_,
              "SELECT tenant_id, min(interval_start), sum(gpu_ns), sum(kernels), "
              "sum(bytes_to_device), sum(bytes_from_device), max(peak_memory), 0, '', 0 FROM usage "
              "WHERE interval_start >= ?1 AND interval_start < ?2 GROUP BY tenant_id "
              "ORDER BY tenant_id");
  s.bind(1, since).bind(2, until);
  out->clear();
  while (s.step() == sql::kRow) out->push_back(read_usage(s));
  if (!s.finished()) return db_error();
  return {};
}

Result SqlStore::usage_rows(int64_t since, int64_t until, std::vector<UsageRecord>* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_,
              "SELECT tenant_id, interval_start, gpu_ns, kernels, bytes_to_device, "
              "bytes_from_device, peak_memory, student_id, host, gpu FROM usage "
              "WHERE interval_start >= ?1 AND interval_start < ?2 "
              "ORDER BY interval_start, tenant_id, student_id, host, gpu");
  s.bind(1, since).bind(2, until);
  out->clear();
  while (s.step() == sql::kRow) out->push_back(read_usage(s));
  if (!s.finished()) return db_error();
  return {};
}

Result SqlStore::ledger_sum(uint32_t student, TenantId tenant, int64_t since, int64_t until,
                            int64_t* gpu_ns) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_, student != 0
                       ? "SELECT coalesce(sum(gpu_ns), 0) FROM usage WHERE student_id = ?1 "
                         "AND interval_start >= ?3 AND interval_start < ?4"
                       : "SELECT coalesce(sum(gpu_ns), 0) FROM usage WHERE student_id = 0 "
                         "AND tenant_id = ?2 AND interval_start >= ?3 AND interval_start < ?4");
  s.bind(1, static_cast<int64_t>(student)).bind(2, static_cast<int64_t>(tenant));
  s.bind(3, since).bind(4, until);
  if (s.step() != sql::kRow) return db_error();
  *gpu_ns = s.int64(0);
  return {};
}

int SqlStore::schema_version() {
  std::lock_guard lock(mu_);
  return db_.schema_version();
}

Result SqlStore::report_host(const HostRow& h) {
  std::lock_guard lock(mu_);
  if (Result r = writable(); !r.ok()) return r;
  if (!valid_host_name(h.name)) return Result::invalid_argument(bad_name("host", h.name));
  sql::Stmt s(db_,
              "INSERT INTO hosts(name, started_at, last_seen, backend, gpus) "
              "VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(name) DO UPDATE SET "
              "started_at = ?2, last_seen = ?3, backend = ?4, gpus = ?5");
  s.bind(1, h.name).bind(2, h.started_at).bind(3, h.last_seen).bind(4, h.backend);
  s.bind(5, h.gpus);
  return s.step() == sql::kDone ? Result() : db_error();
}

Result SqlStore::list_hosts(std::vector<HostRow>* out) {
  std::lock_guard lock(mu_);
  sql::Stmt s(db_, "SELECT name, started_at, last_seen, backend, gpus FROM hosts ORDER BY name");
  out->clear();
  while (s.step() == sql::kRow) {
    out->push_back({s.text(0), s.int64(1), s.int64(2), s.text(3), s.text(4)});
  }
  if (!s.finished()) return db_error();
  return {};
}

bool valid_host_name(std::string_view name) {
  // A DNS name: letters, digits, '-' and '.', up to 253.
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

Result open_sqlite_store(const std::string& path, std::unique_ptr<Store>* out,
                         StoreOptions options) {
  auto store = std::make_unique<SqlStore>();
  if (Result r = store->open(path, false, options); !r.ok()) return r;
  *out = std::move(store);
  return {};
}

Result open_postgres_store(const std::string& conninfo, std::unique_ptr<Store>* out,
                           StoreOptions options) {
  auto store = std::make_unique<SqlStore>();
  if (Result r = store->open(conninfo, true, options); !r.ok()) return r;
  *out = std::move(store);
  return {};
}

bool is_postgres_location(std::string_view location) {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

std::string printable_location(const std::string& location) {
  if (!is_postgres_location(location)) return location;
  std::string out = location;
  // scheme://user:password@host/...: the password goes.
  const size_t scheme = out.find("://") + 3;
  const size_t at = out.find('@', scheme);
  const size_t slash = out.find('/', scheme);
  if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
    const size_t colon = out.find(':', scheme);
    if (colon != std::string::npos && colon < at) out.erase(colon, at - colon);
  }
  // ...?password=secret&...: so does a password given as a parameter.
  if (const size_t query = out.find('?'); query != std::string::npos) {
    for (size_t p = query; (p = out.find("password=", p + 1)) != std::string::npos;) {
      if (out[p - 1] != '?' && out[p - 1] != '&') continue;
      const size_t value = p + 9;
      const size_t end = std::min(out.find('&', value), out.size());
      out.replace(value, end - value, "...");
    }
  }
  return out;
}

Result open_store(const std::string& location, std::unique_ptr<Store>* out, StoreOptions options) {
  return is_postgres_location(location) ? open_postgres_store(location, out, options)
                                        : open_sqlite_store(location, out, options);
}

}  // namespace vgpu::policy
