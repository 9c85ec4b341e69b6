// vgpud killed with SIGKILL while a class's VMs run, then restarted on the
// same runtime directory and database: every VM gets a clear error (not a
// hang), a new run after the restart works, and the usage ledger stays
// consistent (crash_test.cpp kills an idle-budget daemon 22 times; this one
// kills it under several VMs at once and checks what each VM's runs add).
#include <cstdio>

#include <catch2/catch.hpp>

#include "quota_harness.h"
#include "robust_harness.h"

using namespace vgpu::test;
using namespace std::chrono_literals;

namespace {

constexpr int64_t kMs = 1000000;

int64_t vm_used_ns(const std::string& db, const std::string& vm) {
  return query_int(db,
                   "SELECT coalesce(sum(gpu_ns), 0) FROM usage WHERE tenant_id = "
                   "(SELECT tenant_id FROM vms WHERE name = '" + vm + "')");
}

int64_t duplicate_rows(const std::string& db) {
  return query_int(db,
                   "SELECT count(*) FROM (SELECT tenant_id, student_id, interval_start, count(*) AS n "
                   "FROM usage GROUP BY 1, 2, 3 HAVING n > 1)");
}

}  // namespace

TEST_CASE("vgpud killed and restarted under running VMs: clear errors, new runs work, the ledger "
          "holds",
          "[restart]") {
  constexpr int kVms = 4;
  constexpr int kCycles = 3;
  TempDir dir;
  const std::string db = dir.path() + "/vgpu.db";
  std::vector<std::string> vms;
  {
    QuotaDaemon d(dir.path(), db);
    REQUIRE(d.ctl({"course", "create", "ops101"}).exit_code == 0);
    for (int i = 0; i < kVms; ++i) {
      vms.push_back("ops-vm" + std::to_string(i));
      REQUIRE(d.ctl({"student", "add", "s" + std::to_string(i), "--course", "ops101", "--vm",
                     vms.back()})
                  .exit_code == 0);
    }
    REQUIRE(d.ctl({"quota", "set", "--course", "ops101", "--gpu-time", "1h/day"}).exit_code == 0);
    REQUIRE(d.stop().exit_code == 0);
  }
  std::vector<int64_t> used(kVms, 0);
  double worst_exit_s = 0, worst_ready_s = 0;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    INFO("cycle " << cycle);
    const auto t0 = std::chrono::steady_clock::now();
    QuotaDaemon d(dir.path(), db);
    REQUIRE(d.ready());
    worst_ready_s = std::max(
        worst_ready_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    // A new run after the (previous) restart works, and the ledger gets its
    // GPU time: 50 kernels of 2 ms.
    for (int i = 0; i < kVms; ++i) {
      const RunResult r = d.run(vms[i], "busy", {"2000", "50"});
      INFO(r.output);
      REQUIRE_THAT(r.output, Catch::Contains("PASS busy"));
    }
    // Long runs on every VM, and the daemon dies under them.
    std::vector<std::unique_ptr<Process>> running;
    for (int i = 0; i < kVms; ++i) running.push_back(d.start(vms[i], "busy", {"2000", "100000"}));
    auto honest = start_test_vm("honest",
                                {"--socket", dir.path() + "/vgpud.sock", "--vm", vms[0], "--count",
                                 "100000"},
                                dir.path() + "/honest-" + std::to_string(cycle) + ".txt");
    // Killed once every VM has work queued (not after a guess at how long
    // starting the programs takes on this machine).
    REQUIRE(eventually(
        [&] {
          const nlohmann::json status = daemon_status(dir.path());
          for (int i = 0; i < kVms; ++i) {
            const nlohmann::json t = tenant_of(status, vms[i]);
            if (!t.contains("queued") || t["queued"].get<uint64_t>() == 0) return false;
          }
          return true;
        },
        60s));
    // What the flusher writes each second, written now: the short runs are on
    // the ledger before the kill, however soon it comes.
    REQUIRE(d.ctl({"usage", "flush"}).exit_code == 0);
    d.kill9();
    const auto killed = std::chrono::steady_clock::now();
    for (auto& p : running) {
      const RunResult r = p->wait(30s);
      INFO(r.output);
      CHECK_FALSE(r.timed_out);
      CHECK(r.exit_code != 0);
      CHECK_THAT(r.output, Catch::Contains("lost the connection to vgpud"));
      worst_exit_s = std::max(
          worst_exit_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count());
    }
    const RunResult h = honest->wait(30s);
    CHECK_FALSE(h.timed_out);
    CHECK_THAT(h.output, Catch::Contains("RESULT fail"));  // it noticed, and said so
    // The ledger: intact, one row per VM, student and hour, never going back,
    // and each VM's short run is on it.
    REQUIRE(integrity_check(db) == "ok");
    CHECK(duplicate_rows(db) == 0);
    for (int i = 0; i < kVms; ++i) {
      const int64_t now = vm_used_ns(db, vms[i]);
      INFO(vms[i] << ": " << used[i] / kMs << " ms -> " << now / kMs << " ms");
      CHECK(now >= used[i] + 100 * kMs);  // the 100 ms run, written before the kill
      used[i] = now;
    }
  }
  // After the last kill: a clean start, a run, a clean stop, and it is all on the ledger.
  QuotaDaemon d(dir.path(), db);
  REQUIRE(d.ready());
  const RunResult r = d.run(vms[1], "busy", {"2000", "50"});
  CHECK_THAT(r.output, Catch::Contains("PASS busy"));
  REQUIRE(d.stop().exit_code == 0);
  CHECK(integrity_check(db) == "ok");
  CHECK(duplicate_rows(db) == 0);
  CHECK(vm_used_ns(db, vms[1]) >= used[1] + 100 * kMs);
  std::printf("restart: %d kills under %d VMs; every VM told within %.2f s, daemon ready again "
              "within %.2f s\n",
              kCycles, kVms, worst_exit_s, worst_ready_s);
}
