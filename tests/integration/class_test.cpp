// A whole class on one GPU: vgpud and 64 simulated VMs (256 with
// VGPU_SOAK=1), set up through vgpuctl as one course with weights and quotas,
// each VM running a mix of real CUDA programs through vgpu-run (small
// kernels, large copies, streams and events, allocations near a memory cap)
// and protocol-level clients that check every answer arrives exactly once.
// Checks: every program passes with correct results; GPU shares of busy VMs
// within 5% of their entitlement; quotas hold (memory cap, GPU-time budget);
// the daemon's resident memory stays flat from warm-up to the end.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>

#include <catch2/catch.hpp>

#include "quota_harness.h"
#include "robust_harness.h"

using namespace vgpu::test;
using namespace std::chrono_literals;

namespace {

constexpr int64_t kMs = 1000000;

struct Job {
  std::string program;  // a test program, or "honest" (vgpu-test-vm)
  std::vector<std::string> args;
  std::string expect;   // a line the output must contain
};

// What VM i runs in round r: eight kinds, rotating.
Job job_for(int i, int round, const std::string& socket, const std::string& vm) {
  switch ((i + 3 * round) % 8) {
    case 0: return {"saxpy", {}, "PASS saxpy"};
    case 1: return {"vector_add", {}, "PASS vector_add"};
    case 2: return {"streams_events", {}, "PASS streams_events"};  // 2 x 16 MiB copies each way
    case 3: return {"struct_param", {}, "PASS struct_param"};
    case 4: return {"constant_memory", {}, "PASS constant_memory"};
    case 5: return {"alloc", {"40", "3"}, "malloc 3 cudaErrorMemoryAllocation"};  // near its cap
    case 6: return {"busy", {"500", "40"}, "PASS busy"};                          // small kernels
    default:
      return {"honest", {"--socket", socket, "--vm", vm, "--count", "10"}, "RESULT ok"};
  }
}

int vm_count() {
  const char* soak = std::getenv("VGPU_SOAK");
  return soak && std::string(soak) == "1" ? 256 : 64;
}

}  // namespace

TEST_CASE("a class of VMs on one GPU: every answer right, shares by weight, quotas hold, memory "
          "flat",
          "[class]") {
  const int n = vm_count();
  const int kShare = 8;
  const std::vector<int> weights = {1, 1, 2, 4, 1, 1, 2, 4};
  TempDir dir;
  const std::string db = dir.path() + "/vgpu.db";
  const std::string socket = dir.path() + "/vgpud.sock";
  // AddressSanitizer (the Debug build) keeps freed memory in a quarantine of
  // up to 256 MiB, which would read as growth: keep it small for the daemon.
  const char* asan = std::getenv("ASAN_OPTIONS");
  QuotaDaemon d(dir.path(), db, true,
                {"ASAN_OPTIONS=" + std::string(asan ? asan : "") +
                 ":quarantine_size_mb=8:thread_local_quarantine_size_kb=256"});
  REQUIRE(d.ready());
  auto ok = [&](const std::vector<std::string>& args) {
    const RunResult r = d.ctl(args);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  };

  // The class, through vgpuctl: one course, a student and a VM each; every
  // VM capped at 100 MiB (alloc 40 3 asks for 120); the share group's weights;
  // one student with a small GPU-time budget.
  const auto setup_start = std::chrono::steady_clock::now();
  ok({"course", "create", "gpu101"});
  ok({"quota", "set", "--course", "gpu101", "--gpu-time", "1h/day", "--memory", "100MiB"});
  std::vector<std::string> vms;
  for (int i = 0; i < n; ++i) {
    vms.push_back("vm" + std::to_string(i));
    ok({"student", "add", "s" + std::to_string(i), "--course", "gpu101", "--vm", vms.back()});
  }
  for (int i = 0; i < kShare; ++i) {
    ok({"quota", "set", "s" + std::to_string(i), "--weight", std::to_string(weights[i])});
  }
  ok({"student", "add", "late", "--course", "gpu101", "--vm", "late-vm"});
  ok({"quota", "set", "late", "--gpu-time", "200ms/day", "--on-exhaust", "reject"});
  const double setup_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();

  // Rounds of the mix: every VM runs one job at once.
  std::vector<double> rss;
  double mix_s = 0;
  auto round = [&](int r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::unique_ptr<Process>> procs;
    std::vector<Job> jobs;
    for (int i = 0; i < n; ++i) {
      jobs.push_back(job_for(i, r, socket, vms[i]));
      if (jobs.back().program == "honest") {
        procs.push_back(start_test_vm("honest", jobs.back().args,
                                      dir.path() + "/honest-" + std::to_string(i) + ".txt"));
      } else {
        procs.push_back(d.start(vms[i], jobs.back().program, jobs.back().args));
      }
    }
    int passed = 0;
    for (int i = 0; i < n; ++i) {
      const RunResult res = procs[i]->wait(600s);
      INFO("round " << r << " " << vms[i] << " " << jobs[i].program << ":\n" << res.output);
      CHECK_FALSE(res.timed_out);
      CHECK(res.exit_code == 0);
      CHECK_THAT(res.output, Catch::Contains(jobs[i].expect));
      CHECK_THAT(res.output, !Catch::Contains("answered a request nobody waits for"));
      if (jobs[i].program == "alloc") CHECK_THAT(res.output, Catch::Contains("malloc 2 cudaSuccess"));
      if (res.exit_code == 0 && res.output.find(jobs[i].expect) != std::string::npos) passed++;
    }
    mix_s = std::max(mix_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    // Each VM that left holds nothing; nothing stays queued.
    json s;
    CHECK(eventually(
        [&] {
          s = daemon_status(d.dir());
          return s.is_object() && s["queued"] == 0 && s["backend"]["contexts"] == 0;
        },
        20s));
    // The daemon's resident memory without AddressSanitizer's shadow
    // (rss_bytes): what a Release build would hold.
    rss.push_back(static_cast<double>(rss_bytes(d.pid())));
    std::printf("class: round %d: %d of %d VMs passed in %.1f s; daemon %.1f MiB resident, %s fds\n",
                r, passed, n, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                rss.back() / (1 << 20), s["process"]["fds"].dump().c_str());
  };
  round(0);  // warm-up
  round(1);

  // GPU shares: the first eight VMs run endless 1 ms kernels; their GPU time
  // over a measured window must split by weight (1:1:2:4 twice).
  std::vector<std::unique_ptr<Process>> busy;
  for (int i = 0; i < kShare; ++i) busy.push_back(d.start(vms[i], "busy", {"1000", "1000000"}));
  auto gpu_ns = [&] {
    const RunResult r = d.ctl({"--json", "top", "--count", "1", "--interval", "0.1"});
    const json j = json::parse(r.output, nullptr, false);
    std::map<std::string, double> out;
    if (j.is_object()) {
      for (const json& t : j["tenants"]) out[t["vm"]] = static_cast<double>(t["gpu_ns"].get<uint64_t>());
    }
    return out;
  };
  // The window opens once every VM has run something (not after a guess at
  // how long starting them takes on this machine).
  REQUIRE(eventually(
      [&] {
        const auto g = gpu_ns();
        for (int i = 0; i < kShare; ++i) {
          if (!g.count(vms[i]) || g.at(vms[i]) == 0) return false;
        }
        return true;
      },
      120s));
  const auto g0 = gpu_ns();
  // The measurement window: shares over 10 s of the class's work.
  std::this_thread::sleep_for(10s);
  const auto g1 = gpu_ns();
  for (auto& p : busy) p->signal(SIGKILL);
  for (auto& p : busy) p->wait(10s);
  double total = 0;
  for (int i = 0; i < kShare; ++i) total += g1.at(vms[i]) - g0.at(vms[i]);
  const double weight_sum = 16;
  double worst = 0;
  for (int i = 0; i < kShare; ++i) {
    const double share = (g1.at(vms[i]) - g0.at(vms[i])) / total;
    const double entitled = weights[i] / weight_sum;
    const double error = std::abs(share - entitled) / entitled;
    worst = std::max(worst, error);
    std::printf("class: %s weight %d: %.2f%% of the GPU (entitled %.2f%%)\n", vms[i].c_str(),
                weights[i], 100 * share, 100 * entitled);
    CHECK(error < 0.05);
  }

  round(2);
  round(3);

  // The GPU-time budget holds: 400 ms of kernels against 200 ms.
  const RunResult late = d.run("late-vm", "busy", {"2000", "200"});
  INFO(late.output);
  CHECK(late.exit_code != 0);
  CHECK_THAT(late.output, Catch::Contains("GPU-time quota exhausted"));
  REQUIRE(d.ctl({"usage", "flush"}).exit_code == 0);  // what vgpud measured, written now
  const int64_t late_ns = query_int(db,
                                    "SELECT coalesce(sum(gpu_ns), 0) FROM usage WHERE student_id = "
                                    "(SELECT id FROM students WHERE name = 'late')");
  CHECK(late_ns >= 200 * kMs);
  CHECK(late_ns <= 200 * kMs + 6 * kMs);

  // Memory flat: resident memory after the last round against after the
  // warm-up rounds (docs/robustness.md gives the tolerance and why).
  const double growth = rss.back() - rss[1];
  std::printf("class: %d VMs, set up in %.1f s, slowest round %.1f s, shares within %.2f%%, "
              "daemon memory %.1f -> %.1f MiB\n",
              n, setup_s, mix_s, 100 * worst, rss[1] / (1 << 20), rss.back() / (1 << 20));
  CHECK(growth < std::max(32.0 * (1 << 20), 0.10 * rss[1]));
  CHECK(d.stop().exit_code == 0);  // and LeakSanitizer, in the Debug build, found no leak
}
