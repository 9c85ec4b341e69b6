// Copy bandwidth through the data area: copy_bw (cudaMemcpy from pageable
// memory, each direction, 4 KiB to 256 MiB) through vgpu-run against vgpud
// (sim backend), next to memcpy of the same sizes measured by the same
// program in the same run. A host-to-device copy goes program buffer ->
// data area (guest) -> the context's device memory (vgpud), in pipelined
// chunks; device-to-host the other way round.
//
//   copy_bench [--max-mib M] [--quick]
// Exit status 0 when both directions reach 0.8x memcpy from 1 MiB up.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "support/stats.h"
#include "support/vgpud.h"

int main(int argc, char** argv) {
  using namespace vgpu::bench;
  long max_mib = 256;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
      max_mib = 4;
    } else if (!std::strcmp(argv[i], "--max-mib") && i + 1 < argc) {
      max_mib = std::atol(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: copy_bench [--max-mib M] [--quick]\n");
      return 2;
    }
  }
  std::printf("cudaMemcpy through the data area vs memcpy, pageable host memory, GB/s (median)\n");
  std::printf("%s\n\n", machine_line().c_str());
  Vgpud vgpud;
  if (!vgpud.ok()) return 1;
  const auto r = vgpud.run("copier", bench_program("copy_bw"), {std::to_string(max_mib)});
  if (r.empty()) return 1;
  std::printf("  %10s %9s %9s %9s %9s %9s  %s\n", "size", "h2d", "d2h", "memcpy", "h2d/mc",
              "d2h/mc", "target (from 1 MiB: 0.8x)");
  bool met = true;
  for (uint64_t kib = 4; kib <= static_cast<uint64_t>(max_mib) * 1024; kib *= 4) {
    const std::string k = std::to_string(kib);
    if (!r.count("h2d_" + k)) break;
    const double h2d = r.at("h2d_" + k), d2h = r.at("d2h_" + k), mc = r.at("memcpy_" + k);
    const bool counts = kib >= 1024;
    const bool ok = h2d >= 0.8 * mc && d2h >= 0.8 * mc;
    if (counts) met &= ok;
    const std::string size = kib >= 1024 ? std::to_string(kib / 1024) + " MiB" : k + " KiB";
    std::printf("  %10s %9.2f %9.2f %9.2f %8.2fx %8.2fx  %s\n", size.c_str(), h2d, d2h, mc,
                h2d / mc, d2h / mc, counts ? (ok ? "met" : "NOT met") : "-");
  }
  std::printf("\n");
  report("both directions, every size from 1 MiB up", met ? "yes" : "no", ">= 0.8x", met);
  return met || quick ? 0 : 1;  // --quick is a smoke run: figures, no verdict
}
