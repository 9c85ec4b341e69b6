// Three vgpud on one machine (three runtime directories, three host names)
// share one PostgreSQL database, as the hosts of a department would: what a
// teacher sets through one host applies on the others, one student's VMs run
// on two hosts and their usage lands in one ledger with the host and GPU of
// each record, and `vgpuctl --db postgresql://... hosts` lists every host
// with its GPUs. Needs the test PostgreSQL server (ctest fixture `postgres`).
#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "postgres_test_server.h"
#include "quota_harness.h"
#include "robust_harness.h"
#include "vgpu/policy/lease.h"

using namespace vgpu::test;
using nlohmann::json;
using namespace std::chrono_literals;

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

TEST_CASE("one student's VMs on two hosts drain one budget: the total stays within the lease bound",
          "[hosts]") {
  const std::string server = postgres_server();
  REQUIRE_FALSE(server.empty());
  PostgresTestDb db(server);
  REQUIRE(db.error().empty());
  std::vector<std::unique_ptr<TempDir>> dirs;
  std::vector<std::unique_ptr<QuotaDaemon>> hosts;
  for (int i = 1; i <= 3; ++i) {
    dirs.push_back(std::make_unique<TempDir>());
    hosts.push_back(std::make_unique<QuotaDaemon>(
        dirs.back()->path(), db.url(), true, std::vector<std::string>{},
        std::vector<std::string>{"--host-name", "node" + std::to_string(i)}));
    INFO(hosts.back()->log());
    REQUIRE(hosts.back()->ready());
  }
  QuotaDaemon& node1 = *hosts[0];
  QuotaDaemon& node2 = *hosts[1];
  constexpr int64_t kMs = 1000000, kBudget = 2000 * kMs;
  node1.ctl_ok({"course", "create", "cs101"});
  node1.ctl_ok(
      {"quota", "set", "--course", "cs101", "--gpu-time", "2s/day", "--on-exhaust", "reject"});
  node1.ctl_ok(
      {"student", "add", "alice", "--course", "cs101", "--vm", "alice-a", "--vm", "alice-b"});

  // 4 s of 2 ms kernels on each host against one 2 s budget: each host alone
  // would let its VM spend the whole of it.
  auto a = node1.start("alice-a", "busy", {"2000", "2000", "10"});
  auto b = node2.start("alice-b", "busy", {"2000", "2000", "10"});
  const RunResult ra = a->wait(120s), rb = b->wait(120s);
  INFO(ra.output << rb.output);
  CHECK(ra.exit_code != 0);
  CHECK(rb.exit_code != 0);
  CHECK_THAT(ra.output, Catch::Contains("GPU-time quota exhausted"));
  CHECK_THAT(rb.output, Catch::Contains("GPU-time quota exhausted"));
  node1.ctl_ok({"usage", "flush"});
  node2.ctl_ok({"usage", "flush"});

  const json report = ctl_db(db.url(), {"usage", "report"});
  REQUIRE(report["rows"].size() == 1);
  const json& alice = report["rows"][0];
  std::map<std::string, int64_t> per_host;
  for (const json& w : alice["where"]) per_host[w["host"]] += w["gpu_ns"].get<int64_t>();
  const int64_t total = alice["gpu_ns"].get<int64_t>();
  // Three hosts share the store: leases of 2 s / (16 x 3). The bound is
  // one lease per host (lease.h), plus one slice per spending host (one 2 ms
  // kernel past a 2 ms slice, as on one host).
  const vgpu::policy::LeaseRules rules;
  const int64_t bound = vgpu::policy::lease_overrun_bound(rules, kBudget, 3) + 2 * 6 * kMs;
  INFO("node1 " << per_host["node1"] << " node2 " << per_host["node2"] << " bound " << bound);
  CHECK(total >= kBudget);  // a host refuses only once every host's spending reached it
  CHECK(total <= kBudget + bound);
  CHECK(per_host["node1"] > 0);
  CHECK(per_host["node2"] > 0);
  CHECK(per_host.size() == 2);
  for (auto& h : hosts) CHECK(h->stop().exit_code == 0);
}

namespace {

// A PostgreSQL server of this test's own (scripts/pg-test-cluster.sh), to
// stop and start without disturbing the tests that share the fixture's.
class OwnServer {
 public:
  OwnServer() {
    const RunResult r = run_command({VGPU_TEST_PG_SCRIPT, "start", file_}, -1, 120s);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::ifstream in(file_);
    std::getline(in, server_);
  }
  ~OwnServer() { run_command({VGPU_TEST_PG_SCRIPT, "stop", file_}, -1, 120s); }
  const std::string& server() const { return server_; }
  bool pause() {
    return run_command({VGPU_TEST_PG_SCRIPT, "pause", file_}, -1, 120s).exit_code == 0;
  }
  bool resume() {
    return run_command({VGPU_TEST_PG_SCRIPT, "resume", file_}, -1, 120s).exit_code == 0;
  }

 private:
  TempDir dir_;
  std::string file_ = dir_.path() + "/server.conn";
  std::string server_;
};

// What the daemon measured for `vm` so far (its `top`), 0 if it is not there.
uint64_t measured(const QuotaDaemon& d, const std::string& vm) {
  const RunResult r = d.ctl({"--json", "top", "--count", "1", "--interval", "0.1"});
  const json j = json::parse(r.output, nullptr, false);
  if (!j.is_object()) return 0;
  for (const json& t : j["tenants"]) {
    if (t["vm"] == vm) return t["gpu_ns"].get<uint64_t>();
  }
  return 0;
}

}  // namespace

TEST_CASE("the database stopped mid-run: hosts keep serving, and the ledger is what they measured",
          "[hosts]") {
  OwnServer pg;
  REQUIRE_FALSE(pg.server().empty());
  PostgresTestDb db(pg.server());
  REQUIRE(db.error().empty());
  TempDir dir1, dir2;
  QuotaDaemon node1(dir1.path(), db.url(), true, {}, {"--host-name", "node1"});
  QuotaDaemon node2(dir2.path(), db.url(), true, {}, {"--host-name", "node2"});
  REQUIRE(node1.ready());
  REQUIRE(node2.ready());
  node1.ctl_ok({"course", "create", "cs101"});
  node1.ctl_ok({"student", "add", "alice", "--course", "cs101", "--vm", "alice-a"});
  node1.ctl_ok({"student", "add", "bob", "--course", "cs101", "--vm", "bob-b"});

  // Both VMs busy (endless 2 ms kernels, ten at a time) before the database goes.
  auto a = node1.start("alice-a", "busy", {"2000", "100000000", "10"});
  auto b = node2.start("bob-b", "busy", {"2000", "100000000", "10"});
  REQUIRE(node1.wait_for_state("alice-a", "busy", *a));
  REQUIRE(node2.wait_for_state("bob-b", "busy", *b));

  REQUIRE(pg.pause());
  const auto stopped_at = std::chrono::steady_clock::now();
  // The hosts keep serving: their VMs' GPU time goes on, and what they
  // measure waits in each host's spool.
  const uint64_t a0 = measured(node1, "alice-a"), b0 = measured(node2, "bob-b");
  CHECK(eventually([&] { return measured(node1, "alice-a") > a0; }, 60s));
  CHECK(eventually([&] { return measured(node2, "bob-b") > b0; }, 60s));
  CHECK(eventually(
      [&] {
        return node1.log().find("keeping it in the spool") != std::string::npos &&
               node2.log().find("keeping it in the spool") != std::string::npos;
      },
      60s));
  CHECK(a->running());
  CHECK(b->running());
  // An admin asking for the usage to be written hears that it waits.
  const RunResult waits = node1.ctl({"usage", "flush"});
  CHECK(waits.exit_code != 0);
  CHECK_THAT(waits.output, Catch::Contains("wait in the spool"));
  std::this_thread::sleep_until(stopped_at + 30s);  // the outage lasts 30 s
  REQUIRE(pg.resume());

  // The programs pause (stopped, their VMs still connected, so each host
  // still lists what it measured); what each host measured goes to the
  // ledger, the spooled batches first, each once.
  a->signal(SIGSTOP);
  b->signal(SIGSTOP);
  auto settled = [](const QuotaDaemon& d, const std::string& vm) {
    uint64_t last = measured(d, vm);
    return eventually(
        [&] {
          const json t = tenant_of(daemon_status(d.dir()), vm);
          const uint64_t now = measured(d, vm);
          const bool still = now == last && t.value("queued", 1) == 0;
          last = now;
          return still;
        },
        60s);
  };
  REQUIRE(settled(node1, "alice-a"));
  REQUIRE(settled(node2, "bob-b"));
  // A flush answers an error while batches still wait in the spool (the
  // hosts reconnect at their next try): it succeeds once all are written.
  for (QuotaDaemon* h : {&node1, &node2}) {
    CHECK(eventually([&] { return h->ctl({"usage", "flush"}).exit_code == 0; }, 60s));
  }
  CHECK(node1.log().find("usage batches kept while the database could not take them") !=
        std::string::npos);
  const uint64_t alice = measured(node1, "alice-a"), bob = measured(node2, "bob-b");
  a->signal(SIGKILL);
  b->signal(SIGKILL);

  const json report = ctl_db(db.url(), {"usage", "report"});
  std::map<std::string, uint64_t> ledger;
  for (const json& r : report["rows"]) ledger[r["student"]] = r["gpu_ns"].get<uint64_t>();
  INFO(node1.log());
  CHECK(alice > a0);
  CHECK(ledger["alice"] == alice);
  CHECK(ledger["bob"] == bob);
}
