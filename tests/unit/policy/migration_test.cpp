// Schema migrations: from an empty file, and from each earlier released schema.
#include <sqlite3.h>

#include <catch2/catch.hpp>

#include "temp_db.h"

using namespace vgpu;
using namespace vgpu::policy;
using namespace vgpu::policy::test;

namespace {

// Schema version 1 exactly as it shipped, with some data in it.
void make_v1(const std::string& path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  const char* sql = R"sql(
    PRAGMA journal_mode=WAL;
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
    INSERT INTO vms VALUES (1, 'alice-vm', 100, 200), (2, 'bob-vm', 150, 250);
    INSERT INTO usage VALUES (1, 3600, 1000, 3, 10, 20, 4096), (1, 7200, 500, 1, 0, 0, 8192),
                             (2, 3600, 70, 1, 0, 0, 0);
    PRAGMA user_version = 1;
  )sql";
  REQUIRE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
}

std::string integrity(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr);
  std::string out = sqlite3_step(s) == SQLITE_ROW
                        ? reinterpret_cast<const char*>(sqlite3_column_text(s, 0))
                        : "no answer";
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

}  // namespace

TEST_CASE("an empty database migrates to the latest schema") {
  TempDb db;
  auto s = db.open();
  REQUIRE(s);
  CHECK(s->schema_version() == 10);
  if (!db.pg) CHECK(integrity(db.path) == "ok");
}

TEST_CASE("a version 1 database migrates keeping its VMs and ledger", "[sqlite]") {
  TempDb db;
  make_v1(db.path);
  auto s = db.open();
  REQUIRE(s);
  CHECK(s->schema_version() == 10);
  std::vector<VmRow> vms;
  REQUIRE(s->list_vms(&vms).ok());
  REQUIRE(vms.size() == 2);
  CHECK(vms[0].name == "alice-vm");
  CHECK(vms[0].first_seen == 100);
  CHECK(vms[0].student.empty());
  std::vector<UsageRecord> usage;
  REQUIRE(s->usage_rows(0, 10800, &usage).ok());
  REQUIRE(usage.size() == 3);
  CHECK(usage[0].student == 0);
  REQUIRE(s->usage_between(0, 10800, &usage).ok());
  CHECK(usage[0].gpu_ns == 1500);
  CHECK(usage[0].peak_memory == 8192);
  // Old usage is the VM's while unassigned.
  int64_t ns = 0;
  REQUIRE(s->ledger_sum(0, 1, 0, 10800, &ns).ok());
  CHECK(ns == 1500);
  // And the new tables work on the migrated file.
  REQUIRE(s->create_course(root(), "cs101", "").ok());
  const Result added = s->add_student(root(), "alice", "cs101", {"alice-vm"});
  INFO(added.message());
  REQUIRE(added.ok());
  REQUIRE(s->list_vms(&vms).ok());
  CHECK(vms[0].student == "alice");
  s.reset();
  CHECK(integrity(db.path) == "ok");
}

TEST_CASE("a read-only open refuses an old schema and writes nothing", "[sqlite]") {
  TempDb db;
  make_v1(db.path);
  std::unique_ptr<Store> s;
  const Result old = open_sqlite_store(db.path, &s, {.read_only = true});
  CHECK(old.code() == Result::Code::kConflict);
  CHECK_THAT(old.message(), Catch::Contains("schema version 1"));
  CHECK(s == nullptr);
  REQUIRE(db.open());  // migrate it
  REQUIRE(open_sqlite_store(db.path, &s, {.read_only = true}).ok());
  const Result write = s->create_course(root(), "x", "");
  CHECK(write.code() == Result::Code::kReadOnly);
  CHECK(write.message() == "the database was opened read-only");
  std::vector<CourseRow> courses;
  REQUIRE(s->list_courses(root(), &courses).ok());
  CHECK(courses.empty());
}
