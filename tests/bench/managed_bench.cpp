// What managed memory costs next to explicit copies of the same data:
// managed_cost (tests/bench/programs) run through NVIDIA's runtime over vgpu's
// guest driver on the sim backend. For buffers of 1 to 64 MiB it prints the
// time of one round (CPU writes all, kernel, CPU reads all) with explicit
// cudaMemcpy and with managed memory, their ratio, and the time when the CPU
// touches one float per MiB (what moves is what the CPU touched). The issue
// sets no target: the figures are recorded in docs/performance.md.
//
//   managed_bench [--quick]
#include <cstdio>
#include <cstring>
#include <string>

#include "support/stats.h"
#include "support/vgpud.h"

int main(int argc, char** argv) {
  using namespace vgpu::bench;
  const bool quick = argc > 1 && !std::strcmp(argv[1], "--quick");
  if (argc > 1 && !quick) {
    std::fprintf(stderr, "usage: managed_bench [--quick]\n");
    return 2;
  }
  std::printf("Managed memory against explicit copies (sim backend, driver path)\n");
  std::printf("%s\n\n", machine_line().c_str());
  Vgpud vgpud;
  if (!vgpud.ok()) return 1;
  const std::string max_mib = quick ? "1" : "64";
  const std::string rounds = quick ? "1" : "5";
  const auto r = vgpud.run("managed", bench_program("managed_cost"), {max_mib, rounds});
  if (r.empty()) return 1;
  std::printf("  %-8s %14s %14s %8s %16s\n", "buffer", "explicit ms", "managed ms", "ratio",
              "1 float/MiB ms");
  for (int mib = 1; mib <= std::stoi(max_mib); mib *= 4) {
    const std::string s = std::to_string(mib);
    const double e = r.at("explicit_ms_" + s), m = r.at("managed_ms_" + s), sp = r.at("sparse_ms_" + s);
    std::printf("  %4d MiB %14.3f %14.3f %7.2fx %16.3f\n", mib, e, m, m / e, sp);
  }
  return 0;
}
