// kill -9 of vgpud at random moments of a busy run, again and again: the
// database must open clean every time, lose at most the last batch, and the
// student's budget must still hold across restarts.
#include <random>
#include <thread>

#include <catch2/catch.hpp>

#include "quota_harness.h"

using namespace vgpu::test;
using namespace std::chrono_literals;

TEST_CASE("vgpud killed with SIGKILL at random moments keeps its database and budgets", "[crash]") {
  constexpr int64_t kMs = 1000000;
  constexpr int64_t kBudget = 2500 * kMs;
  constexpr int kKills = 22;
  TempDir dir;
  const std::string db = dir.path() + "/vgpu.db";
  {
    QuotaDaemon d(dir.path(), db);
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"course", "create", "cs101"},
             {"student", "add", "kim", "--course", "cs101", "--vm", "kim-vm"},
             {"quota", "set", "kim", "--gpu-time", "2500ms/day", "--on-exhaust", "reject"}}) {
      REQUIRE(d.ctl(args).exit_code == 0);
    }
    REQUIRE(d.stop().exit_code == 0);
  }
  const std::string used_sql =
      "SELECT coalesce(sum(gpu_ns), 0) FROM usage WHERE student_id = "
      "(SELECT id FROM students WHERE name = 'kim')";
  const std::string today = std::to_string(std::time(nullptr) / 86400 * 86400);

  std::mt19937 rng(std::random_device{}());
  int64_t previous = 0;
  int rejected_runs = 0;
  for (int i = 0; i < kKills; ++i) {
    // Sometimes during start-up (migrations, loading), mostly mid-run.
    const int kill_after_ms = i % 5 == 0 ? std::uniform_int_distribution<int>(0, 600)(rng)
                                         : std::uniform_int_distribution<int>(600, 2500)(rng);
    INFO("kill " << i << " after " << kill_after_ms << " ms");
    QuotaDaemon d(dir.path(), db, /*wait_ready=*/false);
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + std::chrono::milliseconds(kill_after_ms);
    std::unique_ptr<Process> program;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!program && d.ready()) program = d.start("kim-vm", "busy", {"2000", "100000"});
      std::this_thread::sleep_for(2ms);
    }
    d.kill9();
    if (program) {
      const RunResult r = program->wait(30s);
      CHECK_FALSE(r.timed_out);
      if (r.output.find("GPU-time quota exhausted") != std::string::npos) ++rejected_runs;
    }
    REQUIRE(integrity_check(db) == "ok");
    const int64_t used = query_int(db, used_sql + " AND interval_start >= " + today);
    INFO("used " << used / kMs << " ms");
    CHECK(used >= previous);            // nothing written is ever lost
    CHECK(used <= kBudget + 10 * kMs);  // at most a slice past the budget, ever
    previous = used;
  }
  // After all that, the daemon starts clean and the budget still holds.
  QuotaDaemon d(dir.path(), db);
  REQUIRE(d.ready());
  const RunResult last = d.run("kim-vm", "busy", {"2000", "2000"});
  INFO(last.output);
  // 4 s of work against what is left of 2.5 s: it runs out and is refused.
  CHECK(last.exit_code != 0);
  CHECK_THAT(last.output, Catch::Contains("GPU-time quota exhausted"));
  REQUIRE(d.ctl({"usage", "flush"}).exit_code == 0);
  CHECK(query_int(db, used_sql) <= kBudget + 10 * kMs);
  CHECK(d.stop().exit_code == 0);
  CHECK(integrity_check(db) == "ok");
  // The run reached the budget across the restarts and was then refused.
  CHECK(query_int(db, used_sql) >= kBudget);
  INFO("runs refused mid-way through the kills: " << rejected_runs);
}
