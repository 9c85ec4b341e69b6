// The daemon at rest: vgpud's CPU while VMs are attached and idle, and its
// memory per attached VM. Starts vgpud (sim backend), measures it with no VM
// (the baseline), then attaches N simulated VMs (idle_vm through vgpu-run: one
// call, which opens the channel and creates the VM's context, then sleep) and
// measures again:
//   CPU       run time of all vgpud threads over the window (schedstat, ns),
//             as a share of one core, and wake-ups per second;
//   memory    RSS and PSS of vgpud (smaps_rollup), and the resident part of
//             shared memory (the VMs' regions and device-memory files).
// No ivshmem-plain VM is configured: nobody rings for those, so the loop naps
// (50 us to 5 ms) while one is attached; that is by design and not measured.
//
//   idle_bench [--vms N] [--seconds S] [--quick]
// Exit status 0 when vgpud uses under 1% of a core with the VMs attached.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "support/procs.h"
#include "support/stats.h"
#include "support/vgpud.h"

namespace {

using namespace vgpu::bench;

struct Window {
  double core_share = 0;  // CPU time / wall time
  double wakeups_per_s = 0;
  std::map<int, CpuSample> before, after;
};

Window measure_cpu(pid_t pid, int seconds) {
  Window w;
  w.before = cpu_by_thread(pid);
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  w.after = cpu_by_thread(pid);
  const double wall_ns = std::chrono::duration<double, std::nano>(
                             std::chrono::steady_clock::now() - t0).count();
  uint64_t cpu = 0, switches = 0;
  for (const auto& [tid, a] : w.after) {
    auto b = w.before.find(tid);
    cpu += a.cpu_ns - (b == w.before.end() ? 0 : b->second.cpu_ns);
    switches += a.switches - (b == w.before.end() ? 0 : b->second.switches);
  }
  w.core_share = static_cast<double>(cpu) / wall_ns;
  w.wakeups_per_s = static_cast<double>(switches) * 1e9 / wall_ns;
  return w;
}

void print_threads(const Window& w, int seconds) {
  std::printf("    per thread (wake-ups/s, CPU us/s):");
  for (const auto& [tid, a] : w.after) {
    auto b = w.before.find(tid);
    const uint64_t sw = a.switches - (b == w.before.end() ? 0 : b->second.switches);
    const uint64_t ns = a.cpu_ns - (b == w.before.end() ? 0 : b->second.cpu_ns);
    std::printf(" [%.1f, %.1f]", static_cast<double>(sw) / seconds,
                static_cast<double>(ns) / 1000.0 / seconds);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  int vms = 64, seconds = 10;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
      vms = 4;
      seconds = 1;
    } else if (!std::strcmp(argv[i], "--vms") && i + 1 < argc) {
      vms = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: idle_bench [--vms N] [--seconds S] [--quick]\n");
      return 2;
    }
  }
  std::printf("vgpud at rest: %d idle simulated VMs, %d s windows\n", vms, seconds);
  std::printf("%s\n\n", machine_line().c_str());
  Vgpud vgpud;
  if (!vgpud.ok()) return 1;
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const MemorySample m0 = memory_of(vgpud.pid());
  const Window w0 = measure_cpu(vgpud.pid(), seconds);

  std::vector<pid_t> clients;
  for (int i = 0; i < vms; ++i) {
    clients.push_back(vgpud.start("idle" + std::to_string(i), bench_program("idle_vm"), {}));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (int i = 0; i < vms; ++i) {
    while (vgpud.output_of("idle" + std::to_string(i)).find("ready") == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "idle_bench: VM idle%d did not attach:\n%s\n", i,
                     vgpud.output_of("idle" + std::to_string(i)).c_str());
        for (pid_t p : clients) kill_group(p);
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // let every thread settle
  const MemorySample m1 = memory_of(vgpud.pid());
  const Window w1 = measure_cpu(vgpud.pid(), seconds);
  for (pid_t p : clients) kill_group(p);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const MemorySample m2 = memory_of(vgpud.pid());

  std::printf("  %-34s %14s %14s\n", "CPU", "no VM", (std::to_string(vms) + " idle VMs").c_str());
  std::printf("  %-34s %13.4f%% %13.4f%%\n", "share of one core", 100 * w0.core_share,
              100 * w1.core_share);
  std::printf("  %-34s %14.1f %14.1f\n", "wake-ups per second", w0.wakeups_per_s,
              w1.wakeups_per_s);
  print_threads(w1, seconds);
  std::printf("\n  %-34s %10s %10s %10s %12s\n", "memory, KiB", "no VM", "attached",
              "detached", "per VM");
  auto row = [&](const char* name, uint64_t a, uint64_t b, uint64_t c) {
    std::printf("  %-34s %10llu %10llu %10llu %12.1f\n", name, static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b), static_cast<unsigned long long>(c),
                (static_cast<double>(b) - static_cast<double>(a)) / vms);
  };
  row("RSS", m0.rss_kib, m1.rss_kib, m2.rss_kib);
  row("PSS", m0.pss_kib, m1.pss_kib, m2.pss_kib);
  row("  of which resident shared memory", m0.rss_shmem_kib, m1.rss_shmem_kib, m2.rss_shmem_kib);
  row("  anonymous (heap, stacks)", m0.anon_kib, m1.anon_kib, m2.anon_kib);
  std::printf("\nRatios:\n");
  char value[32];
  std::snprintf(value, sizeof value, "%.3f%%", 100 * w1.core_share);
  const bool met = report("vgpud CPU with the VMs attached, share of one core", value, "< 1%",
                          w1.core_share < 0.01);
  return met || quick ? 0 : 1;  // --quick is a smoke run: figures, no verdict
}
