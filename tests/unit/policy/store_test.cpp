// The policy store on real SQLite files, and (policy_test_postgres) on a
// real PostgreSQL server: the tests tagged [sqlite] are about SQLite itself.
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <catch2/catch.hpp>

#include "temp_db.h"
#include "vgpu/policy/store.h"

using namespace vgpu;
using namespace vgpu::policy;

using vgpu::policy::test::TempDb;

TEST_CASE("a new database is created at the latest schema and reopened unchanged") {
  TempDb db;
  std::unique_ptr<Store> s;
  REQUIRE(db.open(&s).ok());
  const int version = s->schema_version();
  CHECK(version >= 1);
  TenantId alice = 0, bob = 0, again = 0;
  REQUIRE(s->tenant_for_vm("alice", &alice).ok());
  REQUIRE(s->tenant_for_vm("bob", &bob).ok());
  CHECK(alice != bob);
  s.reset();
  REQUIRE(db.open(&s).ok());
  CHECK(s->schema_version() == version);
  REQUIRE(s->tenant_for_vm("alice", &again).ok());
  CHECK(again == alice);
  std::vector<VmRow> vms;
  REQUIRE(s->list_vms(&vms).ok());
  REQUIRE(vms.size() == 2);
  CHECK(vms[0].name == "alice");
}

TEST_CASE("usage batches add up per tenant and interval") {
  TempDb db;
  std::unique_ptr<Store> s;
  REQUIRE(db.open(&s).ok());
  TenantId a = 0;
  REQUIRE(s->tenant_for_vm("a", &a).ok());
  const UsageRecord r1{a, 3600, 100, 2, 10, 20, 1000};
  const UsageRecord r2{a, 3600, 50, 1, 5, 0, 3000};
  const UsageRecord r3{a, 7200, 7, 1, 0, 0, 500};
  REQUIRE(s->record_usage(std::vector{r1, r2}).ok());
  REQUIRE(s->record_usage(std::vector{r3}).ok());
  std::vector<UsageRecord> out;
  REQUIRE(s->usage_between(0, 7200, &out).ok());
  REQUIRE(out.size() == 1);
  CHECK(out[0].gpu_ns == 150);
  CHECK(out[0].kernels == 3);
  CHECK(out[0].bytes_to_device == 15);
  CHECK(out[0].peak_memory == 3000);
  REQUIRE(s->usage_between(0, 10800, &out).ok());
  CHECK(out[0].gpu_ns == 157);
}

TEST_CASE("a database from a newer vgpu is refused, not damaged", "[sqlite]") {
  TempDb db;
  {
    std::unique_ptr<Store> s;
    REQUIRE(db.open(&s).ok());
  }
  REQUIRE(std::system(("sqlite3 " + db.path + " 'PRAGMA user_version = 999'").c_str()) == 0);
  std::unique_ptr<Store> s;
  const Result r = open_sqlite_store(db.path, &s);
  CHECK(r.code() == Result::Code::kStorage);
  CHECK_THAT(r.message(), Catch::Contains("newer"));
}

TEST_CASE("a file that is not a database gives a clear error", "[sqlite]") {
  TempDb db;
  {
    FILE* f = std::fopen(db.path.c_str(), "w");
    std::fputs("this is not sqlite", f);
    std::fclose(f);
  }
  std::unique_ptr<Store> s;
  const Result r = open_sqlite_store(db.path, &s);
  CHECK(r.code() == Result::Code::kStorage);
  CHECK_FALSE(r.message().empty());
}

TEST_CASE("readers see consistent data while a writer adds usage") {
  TempDb db;
  std::unique_ptr<Store> writer;
  REQUIRE(db.open(&writer).ok());
  TenantId a = 0;
  REQUIRE(writer->tenant_for_vm("a", &a).ok());
  std::atomic<bool> done{false};
  std::thread w([&] {
    for (int i = 0; i < 200; ++i) {
      // Each batch adds 1 to gpu_ns and 1 to kernels: readers must always see them equal.
      (void)writer->record_usage(std::vector{UsageRecord{a, 0, 1, 1, 0, 0, 0}});
    }
    done = true;
  });
  std::unique_ptr<Store> reader;
  REQUIRE(db.open(&reader).ok());
  int reads = 0;
  while (!done) {
    std::vector<UsageRecord> out;
    REQUIRE(reader->usage_between(0, 1, &out).ok());
    if (!out.empty()) CHECK(out[0].gpu_ns == out[0].kernels);
    ++reads;
  }
  w.join();
  CHECK(reads > 0);
}

TEST_CASE("finding a VM reads only: it neither creates one nor waits for a writer", "[sqlite]") {
  TempDb db;
  std::unique_ptr<Store> s;
  REQUIRE(db.open(&s).ok());
  TenantId a = 0, found = 99;
  REQUIRE(s->find_vm("a", &found).ok());
  CHECK(found == 0);
  std::vector<VmRow> vms;
  REQUIRE(s->list_vms(&vms).ok());
  CHECK(vms.empty());
  REQUIRE(s->tenant_for_vm("a", &a).ok());

  // Another program holds the write lock (a sqlite3 shell in a transaction).
  sqlite3* other = nullptr;
  REQUIRE(sqlite3_open(db.path.c_str(), &other) == SQLITE_OK);
  REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE; UPDATE vms SET last_seen = 1", nullptr, nullptr,
                       nullptr) == SQLITE_OK);
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(s->find_vm("a", &found).ok());
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(found == a);
  CHECK(took < std::chrono::seconds(1));  // the store's busy timeout is 5 s
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
}
