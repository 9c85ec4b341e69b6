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

TEST_CASE("the ledger keeps each host's and GPU's usage apart; hosts report themselves") {
  TempDb db;
  std::unique_ptr<Store> s;
  REQUIRE(db.open(&s).ok());
  TenantId a = 0;
  REQUIRE(s->tenant_for_vm("a", &a).ok());
  UsageRecord r{a, 3600, 10, 1, 0, 0, 100};
  r.host = "node1";
  r.gpu = 0;
  UsageRecord same = r;  // the same host, GPU and hour: summed
  same.gpu_ns = 5;
  UsageRecord other_gpu = r;
  other_gpu.gpu = 3;
  other_gpu.gpu_ns = 7;
  UsageRecord other_host = r;
  other_host.host = "node2";
  other_host.gpu_ns = 20;
  REQUIRE(s->record_usage(std::vector{r, same, other_gpu, other_host}).ok());
  std::vector<UsageRecord> rows;
  REQUIRE(s->usage_rows(0, 7200, &rows).ok());
  REQUIRE(rows.size() == 3);
  CHECK((rows[0].host == "node1" && rows[0].gpu == 0 && rows[0].gpu_ns == 15));
  CHECK((rows[1].host == "node1" && rows[1].gpu == 3 && rows[1].gpu_ns == 7));
  CHECK((rows[2].host == "node2" && rows[2].gpu == 0 && rows[2].gpu_ns == 20));
  // A student's budget is one across hosts and GPUs.
  int64_t ns = 0;
  REQUIRE(s->ledger_sum(0, a, 0, 7200, &ns).ok());
  CHECK(ns == 42);

  REQUIRE(s->report_host({"node2", 100, 160, "sim", R"([{"index":0}])"}).ok());
  REQUIRE(s->report_host({"node1", 100, 150, "cuda", "[]"}).ok());
  REQUIRE(s->report_host({"node1", 100, 170, "cuda", R"([{"index":0},{"index":1}])"}).ok());
  std::vector<HostRow> hosts;
  REQUIRE(s->list_hosts(&hosts).ok());
  REQUIRE(hosts.size() == 2);
  CHECK(hosts[0].name == "node1");
  CHECK(hosts[0].last_seen == 170);
  CHECK(hosts[0].backend == "cuda");
  CHECK(hosts[0].gpus == R"([{"index":0},{"index":1}])");
  CHECK(hosts[1].name == "node2");
  const Result bad = s->report_host({"no de;1", 1, 1, "sim", "[]"});
  CHECK(bad.code() == Result::Code::kInvalidArgument);
  REQUIRE(s->list_hosts(&hosts).ok());
  CHECK(hosts.size() == 2);
}

TEST_CASE("a host's usage batch is applied once, however often it is sent") {
  TempDb db;
  std::unique_ptr<Store> s;
  REQUIRE(db.open(&s).ok());
  TenantId a = 0;
  REQUIRE(s->tenant_for_vm("a", &a).ok());
  UsageRecord r{a, 3600, 10, 1, 0, 0, 0};
  r.host = "node1";
  int64_t last = -1;
  REQUIRE(s->last_host_batch("node1", &last).ok());
  CHECK(last == 0);
  bool applied = false;
  REQUIRE(s->record_host_usage("node1", 5, std::vector{r}, &applied).ok());
  CHECK(applied);
  // The same batch again (its commit's answer was lost), and an older one: skipped.
  REQUIRE(s->record_host_usage("node1", 5, std::vector{r}, &applied).ok());
  CHECK_FALSE(applied);
  REQUIRE(s->record_host_usage("node1", 4, std::vector{r}, &applied).ok());
  CHECK_FALSE(applied);
  // Another host numbers its own batches.
  REQUIRE(s->record_host_usage("node2", 1, std::vector{r}, &applied).ok());
  CHECK(applied);
  REQUIRE(s->record_host_usage("node1", 6, std::vector{r}, &applied).ok());
  CHECK(applied);
  int64_t ns = 0;
  REQUIRE(s->ledger_sum(0, a, 0, 7200, &ns).ok());
  CHECK(ns == 30);
  REQUIRE(s->last_host_batch("node1", &last).ok());
  CHECK(last == 6);
  CHECK(s->record_host_usage("bad host", 7, std::vector{r}, &applied).code() ==
        Result::Code::kInvalidArgument);
}

TEST_CASE("a usage batch naming a VM the database does not know is refused as a conflict") {
  TempDb db;
  std::unique_ptr<Store> s;
  REQUIRE(db.open(&s).ok());
  UsageRecord stray{999999, 3600, 10, 1, 0, 0, 0};
  stray.host = "node1";
  bool applied = true;
  const Result r = s->record_host_usage("node1", 5, std::vector{stray}, &applied);
  CHECK(r.code() == Result::Code::kConflict);  // sending it again cannot help
  CHECK_THAT(r.message(), Catch::Contains("refuses this usage batch"));
  CHECK_FALSE(applied);
  int64_t last = -1;
  REQUIRE(s->last_host_batch("node1", &last).ok());
  CHECK(last == 0);  // nothing of it applied
  // The connection goes on: a good batch after it is applied.
  TenantId a = 0;
  REQUIRE(s->tenant_for_vm("a", &a).ok());
  UsageRecord good{a, 3600, 10, 1, 0, 0, 0};
  good.host = "node1";
  REQUIRE(s->record_host_usage("node1", 6, std::vector{good}, &applied).ok());
  CHECK(applied);
}

TEST_CASE("a database's location is printed without its password") {
  CHECK(printable_location("/var/lib/vgpu/vgpu.db") == "/var/lib/vgpu/vgpu.db");
  CHECK(printable_location("postgresql://vgpu:s3cret@db.example.edu:5432/vgpu") ==
        "postgresql://vgpu@db.example.edu:5432/vgpu");
  CHECK(printable_location("postgresql://vgpu@db/vgpu") == "postgresql://vgpu@db/vgpu");
  CHECK(printable_location("postgres://db:5432/vgpu?sslmode=require&password=s3cret") ==
        "postgres://db:5432/vgpu?sslmode=require&password=...");
  CHECK(printable_location("postgresql:///vgpu?password=x&host=/tmp") ==
        "postgresql:///vgpu?password=...&host=/tmp");
}
