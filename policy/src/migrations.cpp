#include "migrations.h"

#include <array>
#include <string_view>

namespace vgpu::policy {
namespace {

constexpr std::array<std::string_view, 1> kMigrations = {
    // 1: VMs (tenants) and the usage ledger.
    R"sql(
      CREATE TABLE vms (
        tenant_id   INTEGER PRIMARY KEY,
        name        TEXT NOT NULL UNIQUE,
        first_seen  INTEGER NOT NULL,
        last_seen   INTEGER NOT NULL
      );
      CREATE TABLE usage (
        tenant_id         INTEGER NOT NULL REFERENCES vms(tenant_id),
        interval_start    INTEGER NOT NULL,
        gpu_ns            INTEGER NOT NULL DEFAULT 0,
        kernels           INTEGER NOT NULL DEFAULT 0,
        bytes_to_device   INTEGER NOT NULL DEFAULT 0,
        bytes_from_device INTEGER NOT NULL DEFAULT 0,
        peak_memory       INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant_id, interval_start)
      );
    )sql",
};

int user_version(sql::Db& db) {
  sql::Stmt s(db, "PRAGMA user_version");
  return s.step() == SQLITE_ROW ? static_cast<int>(s.int64(0)) : -1;
}

}  // namespace

int latest_schema_version() { return static_cast<int>(kMigrations.size()); }

bool migrate(sql::Db& db, std::string* why, int target) {
  if (target < 0) target = latest_schema_version();
  const int current = user_version(db);
  if (current < 0) {
    *why = "cannot read the schema version: " + db.error();
    return false;
  }
  if (current > latest_schema_version()) {
    *why = "the database has schema version " + std::to_string(current) +
           ", newer than this vgpu (" + std::to_string(latest_schema_version()) + ")";
    return false;
  }
  for (int v = current; v < target; ++v) {
    sql::Transaction tx(db);
    if (!tx.began() || !db.exec(kMigrations[static_cast<size_t>(v)], why) ||
        !db.exec("PRAGMA user_version = " + std::to_string(v + 1), why) || !tx.commit()) {
      *why = "migration to schema version " + std::to_string(v + 1) + " failed: " + *why;
      return false;
    }
  }
  return true;
}

}  // namespace vgpu::policy
