// End to end: real processes share the (simulated) GPU by weight. Starts
// vgpud (sim backend) with weights from a config file, runs one `busy`
// program per VM through vgpu-run (every kernel of fixed modeled length, far
// more than the run needs, so every VM stays busy), and reads each VM's
// measured GPU time from vgpud's usage ledger (SQLite, flushed every second)
// at the start and end of the measured window. Prints each VM's share next
// to its entitlement.
//
//   share_bench [--seconds S] [--warmup S] [--kernel-us US] [--policy NAME]
//               [--weights 1,1,2,4,1,1,2,4] [--batch N]
// --batch N: each program synchronizes after every N launches (closed loop:
// the VM is idle for its round trip after each batch).
// Exit status 0 when every VM is within 5% (relative) of its entitlement.
// VGPU_BENCH_KEEP=1 keeps the temporary directory (logs, ledger);
// VGPU_BENCH_LOG=LEVEL sets vgpud's log level (default warn).
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/procs.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using vgpu::bench::spawn;

struct Options {
  int seconds = 20;
  int warmup = 3;
  int kernel_us = 1000;
  int batch = 0;  // 0: never synchronize (always busy)
  std::string policy = "fair";
  std::vector<int> weights = {1, 1, 2, 4, 1, 1, 2, 4};
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--seconds") {
      o->seconds = std::atoi(v.c_str());
    } else if (k == "--warmup") {
      o->warmup = std::atoi(v.c_str());
    } else if (k == "--kernel-us") {
      o->kernel_us = std::atoi(v.c_str());
    } else if (k == "--batch") {
      o->batch = std::atoi(v.c_str());
    } else if (k == "--policy") {
      o->policy = v;
    } else if (k == "--weights") {
      o->weights.clear();
      std::stringstream ss(v);
      for (std::string w; std::getline(ss, w, ',');) o->weights.push_back(std::atoi(w.c_str()));
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && o->seconds > 0 && o->kernel_us > 0 && o->batch >= 0 &&
         !o->weights.empty();
}

// GPU time per VM name, as vgpud last flushed it.
std::map<std::string, double> ledger(const std::string& db_path) {
  std::map<std::string, double> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return out;
  }
  sqlite3_busy_timeout(db, 2000);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db,
                         "SELECT v.name, SUM(u.gpu_ns) FROM usage u JOIN vms v USING (tenant_id) "
                         "GROUP BY v.name",
                         -1, &st, nullptr) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      out[reinterpret_cast<const char*>(sqlite3_column_text(st, 0))] = sqlite3_column_double(st, 1);
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: share_bench [--seconds S] [--warmup S] [--kernel-us US] [--policy NAME] "
                 "[--weights 1,1,2,4,...] [--batch N]\n");
    return 2;
  }
  char tmpl[] = "/tmp/vgpu-share-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string db = dir + "/vgpu.db";
  std::vector<std::string> vms;
  {
    std::ofstream cfg(dir + "/scheduling.json");
    cfg << "{\"policy\": \"" << o.policy << "\", \"weights\": {";
    for (size_t i = 0; i < o.weights.size(); ++i) {
      vms.push_back("vm" + std::to_string(i + 1));
      cfg << (i ? ", " : "") << "\"" << vms.back() << "\": " << o.weights[i];
    }
    cfg << "}}\n";
  }
  const char* log_level = std::getenv("VGPU_BENCH_LOG");  // e.g. info, to see VMs come and go
  const pid_t daemon = spawn({VGPU_BENCH_VGPUD, "--backend", "sim", "--runtime-dir", dir, "--db", db,
                              "--sim-kernels", VGPU_BENCH_KERNELS, "--config",
                              dir + "/scheduling.json", "--log-level", log_level ? log_level : "warn"},
                             dir + "/vgpud.log");
  for (int i = 0; i < 400 && !fs::exists(dir + "/vgpud.sock"); ++i) std::this_thread::sleep_for(50ms);
  if (!fs::exists(dir + "/vgpud.sock")) {
    std::fprintf(stderr, "share_bench: vgpud did not start; see %s/vgpud.log\n", dir.c_str());
    return 1;
  }
  // Enough kernels that no VM runs out, even one that had the whole GPU.
  const long iterations = (o.warmup + o.seconds + 30) * 1000000L / o.kernel_us;
  std::vector<pid_t> programs;
  for (const std::string& vm : vms) {
    std::vector<std::string> args = {VGPU_BENCH_VGPU_RUN, "--runtime-dir", dir, "--vm", vm, "--",
                                     VGPU_BENCH_BUSY, std::to_string(o.kernel_us),
                                     std::to_string(iterations)};
    if (o.batch > 0) args.push_back(std::to_string(o.batch));
    programs.push_back(spawn(args, dir + "/" + vm + ".log"));
  }
  std::this_thread::sleep_for(std::chrono::seconds(o.warmup));
  const auto before = ledger(db);
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  const auto after = ledger(db);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (pid_t p : programs) kill(-p, SIGKILL);
  for (pid_t p : programs) waitpid(p, nullptr, 0);
  kill(daemon, SIGTERM);
  waitpid(daemon, nullptr, 0);

  double total = 0, weights = 0;
  std::map<std::string, double> used;
  for (size_t i = 0; i < vms.size(); ++i) {
    const auto b = before.find(vms[i]), a = after.find(vms[i]);
    used[vms[i]] = (a == after.end() ? 0 : a->second) - (b == before.end() ? 0 : b->second);
    total += used[vms[i]];
    weights += o.weights[i];
  }
  std::printf("End to end: %zu VMs (vgpu-run + busy %d us kernels, %s), policy %s, sim backend, "
              "%d s measured after %d s warm-up\n",
              vms.size(), o.kernel_us,
              o.batch ? ("synchronizing every " + std::to_string(o.batch)).c_str() : "never waiting",
              o.policy.c_str(), o.seconds, o.warmup);
  std::printf("GPU busy %.1f%% of the window (%.2f s of GPU time in %.2f s)\n\n",
              100.0 * total / 1e9 / wall, total / 1e9, wall);
  std::printf("%-6s %6s %12s %12s %10s %12s\n", "vm", "weight", "entitled", "measured", "ratio",
              "gpu time s");
  double worst = 0;
  for (size_t i = 0; i < vms.size(); ++i) {
    const double entitled = o.weights[i] / weights;
    const double share = total > 0 ? used[vms[i]] / total : 0;
    const double ratio = share / entitled;
    worst = std::max(worst, std::abs(ratio - 1));
    std::printf("%-6s %6d %11.2f%% %11.2f%% %10.3f %12.3f\n", vms[i].c_str(), o.weights[i],
                100 * entitled, 100 * share, ratio, used[vms[i]] / 1e9);
  }
  std::printf("\nworst relative error %.2f%% (target <= 5%%)\n", 100 * worst);
  if (total <= 0) std::printf("no usage was recorded: see %s\n", dir.c_str());
  if (!std::getenv("VGPU_BENCH_KEEP")) fs::remove_all(dir);
  return total > 0 && worst <= 0.05 ? 0 : 1;
}
