// Asynchronous launches forwarded per second: launch_rate (an empty kernel,
// launched N times on the default stream, then one cudaDeviceSynchronize)
// through vgpu-run against vgpud (sim backend). Two figures:
//   end to end   N / (first launch .. synchronize returned): every launch
//                crossed the ring, was validated, queued, scheduled and run
//                in the context's worker process;
//   issue rate   N / (first launch .. last launch call returned): what the
//                program sees while the host catches up behind it.
// The empty kernel's plug-in reports 0 ns of modeled time (bench_kernels.cpp),
// so this measures forwarding, not the sim's per-kernel time model.
//
//   launch_bench [--launches N] [--reps R] [--quick]
// Exit status 0 when the end-to-end median reaches 1,000,000 launches/s.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "support/stats.h"
#include "support/vgpud.h"

int main(int argc, char** argv) {
  using namespace vgpu::bench;
  long launches = 1000000, reps = 5;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
      launches = 20000;
      reps = 2;
    } else if (!std::strcmp(argv[i], "--launches") && i + 1 < argc) {
      launches = std::atol(argv[++i]);
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::atol(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: launch_bench [--launches N] [--reps R] [--quick]\n");
      return 2;
    }
  }
  std::printf("Asynchronous launches of an empty kernel, %ld per repetition, %ld repetitions\n",
              launches, reps);
  std::printf("%s\n\n", machine_line().c_str());
  Vgpud vgpud;
  if (!vgpud.ok()) return 1;
  const auto r = vgpud.run("launcher", bench_program("launch_rate"),
                           {std::to_string(launches), std::to_string(reps)});
  if (r.empty()) return 1;
  const double e2e = r.at("e2e_per_s_median"), issue = r.at("issue_per_s_median");
  std::printf("  %-44s %12s %12s\n", "launches/s", "median", "best");
  std::printf("  %-44s %12.0f %12.0f\n", "end to end (launches + synchronize)", e2e,
              r.at("e2e_per_s_best"));
  std::printf("  %-44s %12.0f %12.0f\n", "issue rate (the program's launch calls)", issue,
              r.at("issue_per_s_best"));
  std::printf("  %-44s %12.0f %12s\n", "native CUDA, one thread (reference, not run)", 385000.0,
              "");
  std::printf("\nRatios:\n");
  const bool met = report_ratio("end to end / 1,000,000 per second", e2e / 1e6, ">= 1x", e2e >= 1e6);
  report_ratio("end to end / native (385,000 per second)", e2e / 385000.0, "", true);
  report_ratio("issue rate / 1,000,000 per second", issue / 1e6, ">= 1x", issue >= 1e6);
  return met || quick ? 0 : 1;  // --quick is a smoke run: figures, no verdict
}
