// What only the PostgreSQL store has to do: be opened by several hosts at
// once, by URL or connection string, and live through its server ending the
// connection. Runs in policy_test_postgres, against a real server.
#include <thread>

#include <catch2/catch.hpp>

#include "temp_db.h"
#include "vgpu/policy/store.h"

using namespace vgpu;
using namespace vgpu::policy;
using vgpu::policy::test::root;
using vgpu::policy::test::TempDb;

TEST_CASE("hosts that open one new database at once migrate it once", "[postgres]") {
  TempDb db;
  REQUIRE(db.pg);
  constexpr int kHosts = 4;
  std::vector<std::unique_ptr<Store>> stores(kHosts);
  std::vector<Result> opened(kHosts);
  std::vector<std::thread> hosts;
  for (int i = 0; i < kHosts; ++i) {
    hosts.emplace_back([&, i] { opened[i] = db.open(&stores[i]); });
  }
  for (auto& t : hosts) t.join();
  for (int i = 0; i < kHosts; ++i) {
    INFO(opened[i].message());
    REQUIRE(opened[i].ok());
    CHECK(stores[i]->schema_version() == 10);
  }
  // One ledger: a VM is the same tenant from every host, and ids are not reused.
  TenantId a0 = 0, a1 = 0, b = 0;
  REQUIRE(stores[0]->tenant_for_vm("a", &a0).ok());
  REQUIRE(stores[1]->tenant_for_vm("a", &a1).ok());
  REQUIRE(stores[2]->tenant_for_vm("b", &b).ok());
  CHECK(a0 == a1);
  CHECK(b != a0);
  REQUIRE(stores[1]->record_usage(std::vector{UsageRecord{a0, 3600, 10, 1, 0, 0, 0}}).ok());
  REQUIRE(stores[3]->record_usage(std::vector{UsageRecord{a0, 3600, 5, 1, 0, 0, 0}}).ok());
  std::vector<UsageRecord> usage;
  REQUIRE(stores[0]->usage_between(0, 7200, &usage).ok());
  REQUIRE(usage.size() == 1);
  CHECK(usage[0].gpu_ns == 15);
}

TEST_CASE("a postgresql:// URL opens the same database as its connection string", "[postgres]") {
  TempDb db;
  REQUIRE(db.pg);
  CHECK(is_postgres_location(db.pg->url()));
  CHECK_FALSE(is_postgres_location("/var/lib/vgpu/vgpu.db"));
  std::unique_ptr<Store> by_url, by_keywords;
  const Result r = open_store(db.pg->url(), &by_url);
  INFO(db.pg->url() << ": " << r.message());
  REQUIRE(r.ok());
  REQUIRE(db.open(&by_keywords).ok());
  REQUIRE(by_url->create_course(root(), "cs101", "").ok());
  std::vector<CourseRow> courses;
  REQUIRE(by_keywords->list_courses(root(), &courses).ok());
  REQUIRE(courses.size() == 1);
  CHECK(courses[0].name == "cs101");
}

TEST_CASE("a server that cannot be reached is a clear storage error", "[postgres]") {
  std::unique_ptr<Store> s;
  const Result r = open_postgres_store("host=/nonexistent-vgpu-socket-dir user=vgpu dbname=x", &s);
  CHECK(r.code() == Result::Code::kStorage);
  CHECK_THAT(r.message(), Catch::StartsWith("cannot connect to the PostgreSQL database"));
  CHECK(s == nullptr);
}

TEST_CASE("a read-only store on the server reads and refuses changes", "[postgres]") {
  TempDb db;
  REQUIRE(db.pg);
  {
    auto writer = db.open();
    REQUIRE(writer);
    REQUIRE(writer->create_course(root(), "cs101", "").ok());
  }
  std::unique_ptr<Store> s;
  REQUIRE(db.open(&s, {.read_only = true}).ok());
  std::vector<CourseRow> courses;
  REQUIRE(s->list_courses(root(), &courses).ok());
  CHECK(courses.size() == 1);
  CHECK(s->create_course(root(), "x", "").code() == Result::Code::kReadOnly);
}

TEST_CASE("a store whose connection the server ended connects again at its next call",
          "[postgres]") {
  TempDb db;
  REQUIRE(db.pg);
  auto s = db.open();
  REQUIRE(s);
  TenantId a = 0;
  REQUIRE(s->tenant_for_vm("a", &a).ok());
  REQUIRE(s->record_usage(std::vector{UsageRecord{a, 0, 7, 1, 0, 0, 0}}).ok());
  // The server ends every connection to the database (an administrator, a restart).
  const std::string why = vgpu::test::postgres_admin(
      vgpu::test::postgres_server(),
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + db.pg->name() +
          "'");
  REQUIRE(why.empty());
  // The call that finds the connection gone fails with a storage error (it
  // cannot know whether a change it sent landed); the next one reconnects.
  std::vector<UsageRecord> usage;
  const Result first = s->usage_between(0, 3600, &usage);
  if (!first.ok()) CHECK(first.code() == Result::Code::kStorage);
  REQUIRE(s->usage_between(0, 3600, &usage).ok());
  REQUIRE(usage.size() == 1);
  CHECK(usage[0].gpu_ns == 7);
  REQUIRE(s->record_usage(std::vector{UsageRecord{a, 0, 3, 1, 0, 0, 0}}).ok());
  REQUIRE(s->usage_between(0, 3600, &usage).ok());
  CHECK(usage[0].gpu_ns == 10);
}
