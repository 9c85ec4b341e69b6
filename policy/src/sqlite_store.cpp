// The SQLite implementation of the policy store.
#include <ctime>
#include <mutex>

#include "migrations.h"
#include "sqlite.h"
#include "vgpu/policy/store.h"

namespace vgpu::policy {
namespace {

int64_t unix_now() { return static_cast<int64_t>(std::time(nullptr)); }

class SqliteStore final : public Store {
 public:
  bool open(const std::string& path, std::string* why) {
    return db_.open(path, why) && migrate(db_, why);
  }

  Status tenant_for_vm(const std::string& vm, TenantId* out) override {
    std::lock_guard lock(mu_);
    const int64_t now = unix_now();
    sql::Stmt up(db_,
                 "INSERT INTO vms(name, first_seen, last_seen) VALUES(?1, ?2, ?2) "
                 "ON CONFLICT(name) DO UPDATE SET last_seen = ?2 RETURNING tenant_id");
    up.bind(1, vm).bind(2, now);
    if (up.step() != SQLITE_ROW) return Status::kUnknown;
    *out = static_cast<TenantId>(up.int64(0));
    return Status::kSuccess;
  }

  Status list_vms(std::vector<VmRow>* out) override {
    std::lock_guard lock(mu_);
    sql::Stmt s(db_, "SELECT tenant_id, name, first_seen, last_seen FROM vms ORDER BY name");
    out->clear();
    while (s.step() == SQLITE_ROW) {
      out->push_back({static_cast<TenantId>(s.int64(0)), s.text(1), s.int64(2), s.int64(3)});
    }
    return Status::kSuccess;
  }

  Status record_usage(std::span<const UsageRecord> batch) override {
    std::lock_guard lock(mu_);
    sql::Transaction tx(db_);
    if (!tx.began()) return Status::kUnknown;
    sql::Stmt s(db_,
                "INSERT INTO usage(tenant_id, interval_start, gpu_ns, kernels, bytes_to_device, "
                "bytes_from_device, peak_memory) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) "
                "ON CONFLICT(tenant_id, interval_start) DO UPDATE SET "
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
      if (s.step() != SQLITE_DONE) return Status::kUnknown;
      s.reset();
    }
    return tx.commit() ? Status::kSuccess : Status::kUnknown;
  }

  Status usage_between(int64_t since, int64_t until, std::vector<UsageRecord>* out) override {
    std::lock_guard lock(mu_);
    sql::Stmt s(db_,
                "SELECT tenant_id, min(interval_start), sum(gpu_ns), sum(kernels), "
                "sum(bytes_to_device), sum(bytes_from_device), max(peak_memory) FROM usage "
                "WHERE interval_start >= ?1 AND interval_start < ?2 GROUP BY tenant_id "
                "ORDER BY tenant_id");
    s.bind(1, since).bind(2, until);
    out->clear();
    while (s.step() == SQLITE_ROW) {
      UsageRecord r;
      r.tenant = static_cast<TenantId>(s.int64(0));
      r.interval_start = s.int64(1);
      r.gpu_ns = static_cast<uint64_t>(s.int64(2));
      r.kernels = static_cast<uint64_t>(s.int64(3));
      r.bytes_to_device = static_cast<uint64_t>(s.int64(4));
      r.bytes_from_device = static_cast<uint64_t>(s.int64(5));
      r.peak_memory = static_cast<uint64_t>(s.int64(6));
      out->push_back(r);
    }
    return Status::kSuccess;
  }

  int schema_version() override {
    std::lock_guard lock(mu_);
    sql::Stmt s(db_, "PRAGMA user_version");
    return s.step() == SQLITE_ROW ? static_cast<int>(s.int64(0)) : -1;
  }

 private:
  std::mutex mu_;
  sql::Db db_;
};

}  // namespace

Status open_sqlite_store(const std::string& path, std::unique_ptr<Store>* out, std::string* why) {
  auto store = std::make_unique<SqliteStore>();
  if (!store->open(path, why)) return Status::kInitializationError;
  *out = std::move(store);
  return Status::kSuccess;
}

}  // namespace vgpu::policy
