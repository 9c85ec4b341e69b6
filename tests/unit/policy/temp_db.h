// A database for one test: a SQLite file in /tmp, removed (with its WAL)
// afterwards; or, when the tests run against PostgreSQL ($VGPU_TEST_POSTGRES,
// the ctest `policy_test_postgres`), a fresh database on the test server.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "postgres_test_server.h"
#include "sql.h"
#include "vgpu/policy/store.h"

namespace vgpu::policy::test {

struct TempDb {
  TempDb() {
    if (const std::string server = vgpu::test::postgres_server(); !server.empty()) {
      pg.emplace(server);
    }
  }
  ~TempDb() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  }

  // The SQLite file (tests of SQLite itself use it directly: tagged [sqlite]).
  std::string path = "/tmp/vgpu-policy-test-" + std::to_string(getpid()) + "-" +
                     std::to_string(reinterpret_cast<uintptr_t>(this)) + ".db";
  std::optional<vgpu::test::PostgresTestDb> pg;

  Result open(std::unique_ptr<Store>* out, StoreOptions options = {}) const {
    if (!pg) return open_sqlite_store(path, out, options);
    if (!pg->error().empty()) return Result::storage("test database: " + pg->error());
    return open_postgres_store(pg->conninfo(), out, options);
  }
  // A bare connection to the same database (the SQL layer's own tests).
  bool open_raw(sql::Db* db, std::string* why) const {
    return pg ? db->open_postgres(pg->conninfo(), false, why) : db->open(path, why);
  }
  std::unique_ptr<Store> open() const {
    std::unique_ptr<Store> s;
    if (!open(&s).ok()) return nullptr;
    return s;
  }
};

inline Actor root() { return Actor{0, "root", Role::kAdmin, 0}; }

}  // namespace vgpu::policy::test
