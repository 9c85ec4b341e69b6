// Three vgpud on one machine (three runtime directories, three host names)
// share one PostgreSQL database, as the hosts of a department would: what a
// teacher sets through one host applies on the others, one student's VMs run
// on two hosts and their usage lands in one ledger with the host and GPU of
// each record, and `vgpuctl --db postgresql://... hosts` lists every host
// with its GPUs. Needs the test PostgreSQL server (ctest fixture `postgres`).
#include <map>
#include <set>

#include <catch2/catch.hpp>

#include "postgres_test_server.h"
#include "quota_harness.h"

using namespace vgpu::test;
using nlohmann::json;

namespace {

json ctl_db(const std::string& url, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {vgpuctl_path(), "--db", url, "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  const RunResult r = run_command(argv);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.output);
}

}  // namespace

TEST_CASE("three hosts share one PostgreSQL store: one roster, one ledger, every host listed",
          "[hosts]") {
  const std::string server = postgres_server();
  REQUIRE_FALSE(server.empty());  // run through ctest: the fixture starts the server
  PostgresTestDb db(server);
  REQUIRE(db.error().empty());
  const std::string url = db.url();

  std::vector<std::unique_ptr<TempDir>> dirs;
  std::vector<std::unique_ptr<QuotaDaemon>> hosts;
  for (int i = 1; i <= 3; ++i) {
    dirs.push_back(std::make_unique<TempDir>());
    std::vector<std::string> args = {"--host-name", "node" + std::to_string(i)};
    if (i == 1) args.insert(args.end(), {"--sim-devices", "2"});
    hosts.push_back(std::make_unique<QuotaDaemon>(dirs.back()->path(), url, true,
                                                  std::vector<std::string>{}, args));
    INFO(hosts.back()->log());
    REQUIRE(hosts.back()->ready());
  }
  QuotaDaemon& node1 = *hosts[0];
  QuotaDaemon& node2 = *hosts[1];
  QuotaDaemon& node3 = *hosts[2];

  // The roster is made through node1; node2 and node3 serve it.
  node1.ctl_ok({"course", "create", "cs101"});
  node1.ctl_ok({"quota", "set", "--course", "cs101", "--gpu-time", "1h/day"});
  node1.ctl_ok(
      {"student", "add", "alice", "--course", "cs101", "--vm", "alice-a", "--vm", "alice-b"});
  node1.ctl_ok({"student", "add", "bob", "--course", "cs101", "--vm", "bob-c"});
  CHECK(node3.ctl_json({"--json", "course", "list"})[0]["name"] == "cs101");

  // alice runs on node1 and node2, bob on node3.
  for (auto [host, vm] : {std::pair{&node1, "alice-a"}, {&node2, "alice-b"}, {&node3, "bob-c"}}) {
    const RunResult r = host->run(vm, "busy", {"2000", "50"});
    INFO(vm << ": " << r.output);
    REQUIRE(r.exit_code == 0);
  }
  for (QuotaDaemon* h : {&node1, &node2, &node3}) h->ctl_ok({"usage", "flush"});

  // One ledger, read from the database directly: each record's host and GPU.
  const json report = ctl_db(url, {"usage", "report"});
  std::map<std::string, json> row;
  for (const json& r : report["rows"]) row[r["student"]] = r;
  REQUIRE(row.count("alice"));
  REQUIRE(row.count("bob"));
  auto hosts_of = [](const json& r) {
    std::set<std::string> out;
    uint64_t sum = 0;
    for (const json& w : r["where"]) {
      out.insert(w["host"].get<std::string>());
      sum += w["gpu_ns"].get<uint64_t>();
      CHECK(w["gpu_ns"].get<uint64_t>() > 0);
    }
    CHECK(sum == r["gpu_ns"].get<uint64_t>());
    return out;
  };
  CHECK(hosts_of(row["alice"]) == std::set<std::string>{"node1", "node2"});
  CHECK(hosts_of(row["bob"]) == std::set<std::string>{"node3"});
  // 50 kernels of 2 ms on each host: both hosts' time is alice's one budget.
  CHECK(row["alice"]["gpu_ns"].get<uint64_t>() >= 2 * 50 * 2000000ull * 9 / 10);
  CHECK(row["alice"]["period"]["used_ns"].get<uint64_t>() ==
        row["alice"]["gpu_ns"].get<uint64_t>());

  // Every host, with its GPUs (node1 has two), from the database and from any host.
  const json listed = ctl_db(url, {"hosts"});
  std::map<std::string, size_t> gpus;
  for (const json& h : listed) {
    gpus[h["name"]] = h["gpus"].size();
    CHECK(h["backend"] == "sim");
    CHECK(h["seen_s_ago"].get<int64_t>() < 600);
  }
  CHECK(gpus == std::map<std::string, size_t>{{"node1", 2}, {"node2", 1}, {"node3", 1}});
  CHECK(node2.ctl_json({"--json", "hosts"}).size() == 3);

  for (QuotaDaemon* h : {&node1, &node2, &node3}) {
    const RunResult stopped = h->stop();
    INFO(stopped.output);
    CHECK(stopped.exit_code == 0);
  }
}
