// The forwarding cost of the driver path: the same benchmark programs (built
// with -cudart shared) run through NVIDIA's runtime over vgpu's guest
// libcuda.so.1 (vgpu-run's default) and through vgpu's runtime shim
// (--runtime shim), on one vgpud (sim backend), alternately, so both get the
// same machine. Figures and their ratio, driver / shim:
//   round trip     stream_query_ns_median (cudaStreamQuery: crosses to vgpud;
//                  cudaGetDeviceCount does not, NVIDIA's runtime caches it)
//   launch rate    launch_rate's end-to-end median
//   copies         copy_bw h2d/d2h at 1 and 16 MiB, pageable and pinned
// Target: the driver path costs at most 10% more (round trip <= 1.1x, rates
// and bandwidths >= 0.9x).
//
//   driver_bench [--rounds N] [--quick]
// Exit status 0 when every target is met (always under --quick: a smoke run).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "support/stats.h"
#include "support/vgpud.h"

namespace {

using Results = std::map<std::string, double>;

struct Figure {
  const char* label;
  const char* program;
  const char* key;
  bool lower_is_better;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace vgpu::bench;
  int rounds = 3;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
      rounds = 1;
    } else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: driver_bench [--rounds N] [--quick]\n");
      return 2;
    }
  }
  std::printf("NVIDIA's runtime over vgpu's driver against vgpu's runtime shim, %d round(s)\n",
              rounds);
  std::printf("%s\n\n", machine_line().c_str());
  Vgpud vgpud;
  if (!vgpud.ok()) return 1;

  const std::string calls = quick ? "20000" : "200000";
  const std::string launches = quick ? "20000" : "300000";
  struct Run {
    const char* program;
    std::vector<std::string> args;
  };
  const std::vector<Run> runs = {{"null_call", {calls}},
                                 {"launch_rate", {launches, "3"}},
                                 {"copy_bw", {"16"}},
                                 {"copy_bw_pinned", {"16", "pinned"}}};
  // Best of the rounds for each (program, key): the least disturbed run.
  std::map<std::string, Results> best[2];  // [0] driver, [1] shim
  for (int round = 0; round < rounds; ++round) {
    for (const Run& r : runs) {
      // copy_bw_pinned is copy_bw with "pinned": one program, two entries.
      const std::string program = std::strcmp(r.program, "copy_bw_pinned") ? r.program : "copy_bw";
      for (int path = 0; path < 2; ++path) {
        const std::string vm = std::string(path ? "shim-" : "driver-") + r.program;
        const Results res = vgpud.run(vm, bench_program(program), r.args, 600, path ? "shim" : "");
        if (res.empty()) return 1;
        for (const auto& [key, value] : res) {
          auto& slot = best[path][r.program][key];
          const bool lower = key.find("_ns") != std::string::npos;
          if (slot == 0 || (lower ? value < slot : value > slot)) slot = value;
        }
      }
    }
  }

  const std::vector<Figure> figures = {
      {"round trip, ns (cudaStreamQuery median)", "null_call", "stream_query_ns_median", true},
      {"launches/s end to end (median)", "launch_rate", "e2e_per_s_median", false},
      {"pageable h2d GB/s, 1 MiB", "copy_bw", "h2d_1024", false},
      {"pageable d2h GB/s, 1 MiB", "copy_bw", "d2h_1024", false},
      {"pageable h2d GB/s, 16 MiB", "copy_bw", "h2d_16384", false},
      {"pageable d2h GB/s, 16 MiB", "copy_bw", "d2h_16384", false},
      {"pinned h2d GB/s, 1 MiB", "copy_bw_pinned", "h2d_1024", false},
      {"pinned d2h GB/s, 1 MiB", "copy_bw_pinned", "d2h_1024", false},
      {"pinned h2d GB/s, 16 MiB", "copy_bw_pinned", "h2d_16384", false},
      {"pinned d2h GB/s, 16 MiB", "copy_bw_pinned", "d2h_16384", false},
  };
  std::printf("  %-44s %12s %12s\n", "", "driver", "shim");
  for (const Figure& f : figures) {
    std::printf("  %-44s %12.4g %12.4g\n", f.label, best[0][f.program][f.key],
                best[1][f.program][f.key]);
  }
  std::printf("\nRatios (driver / shim):\n");
  bool met = true;
  for (const Figure& f : figures) {
    const double d = best[0][f.program][f.key], s = best[1][f.program][f.key];
    if (d <= 0 || s <= 0) {
      std::printf("  %s: missing\n", f.label);
      met = false;
      continue;
    }
    const double ratio = d / s;
    const bool ok = f.lower_is_better ? ratio <= 1.1 : ratio >= 0.9;
    met &= report_ratio(f.label, ratio, f.lower_is_better ? "<= 1.1x" : ">= 0.9x", ok);
  }
  return met || quick ? 0 : 1;
}
