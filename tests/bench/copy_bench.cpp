// Copy bandwidth through the data area: copy_bw (each direction, 4 KiB to
// 256 MiB) through vgpu-run against vgpud (sim backend), next to memcpy of
// the same sizes between the same buffers, measured by the same program in
// the same run, and timed as CUDA's bandwidthTest times copies. Two kinds of
// host memory:
//   pinned    cudaMallocHost: the buffer lives in the VM's data area, so the
//             host copies it straight into the context's device memory (one
//             copy, as a GPU's DMA reads pinned memory). Timed as
//             back-to-back cudaMemcpyAsync then a synchronize; the target
//             applies. Synchronous cudaMemcpy is printed too: each copy then
//             also waits one round trip to the host.
//   pageable  malloc: the guest library first copies the bytes into the data
//             area, in pipelined chunks (two copies; native CUDA stages
//             pageable copies through pinned buffers the same way). Timed as
//             cudaMemcpy one after another. Printed for comparison, also
//             next to the same two copies pipelined by two threads of the
//             program with no vgpu in between ("2 threads": what two copies
//             can reach on this machine).
//
//   copy_bench [--max-mib M] [--quick]
// Exit status 0 when both pinned directions reach 0.8x memcpy from 1 MiB up.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "support/stats.h"
#include "support/vgpud.h"

namespace {

using Figures = std::map<std::string, double>;

// Prints one table; true when both directions reach 0.8x memcpy from 1 MiB
// up. Synchronous figures, or the two-thread pipeline, where the run has
// them, follow as more columns.
bool table(const char* title, const Figures& r, long max_mib) {
  const bool sync = r.count("h2d_sync_4") > 0;
  const bool pipe = r.count("pipeline_4") > 0;
  std::printf("%s\n", title);
  std::printf("  %10s %9s %9s %9s %9s %9s  %-15s", "size", "h2d", "d2h", "memcpy", "h2d/mc",
              "d2h/mc", "0.8x from 1 MiB");
  if (sync) std::printf(" %9s %9s %9s %9s", "sync h2d", "sync d2h", "h2d/mc", "d2h/mc");
  if (pipe) std::printf(" %9s %9s %9s", "2 threads", "h2d/2t", "d2h/2t");
  std::printf("\n");
  bool met = true;
  for (uint64_t kib = 4; kib <= static_cast<uint64_t>(max_mib) * 1024; kib *= 4) {
    const std::string k = std::to_string(kib);
    if (!r.count("h2d_" + k)) break;
    const double h2d = r.at("h2d_" + k), d2h = r.at("d2h_" + k), mc = r.at("memcpy_" + k);
    const bool counts = kib >= 1024;
    const bool ok = h2d >= 0.8 * mc && d2h >= 0.8 * mc;
    if (counts) met &= ok;
    const std::string size = kib >= 1024 ? std::to_string(kib / 1024) + " MiB" : k + " KiB";
    std::printf("  %10s %9.2f %9.2f %9.2f %8.2fx %8.2fx  %-15s", size.c_str(), h2d, d2h, mc,
                h2d / mc, d2h / mc, counts ? (ok ? "yes" : "no") : "-");
    if (sync && r.count("h2d_sync_" + k)) {
      const double sh = r.at("h2d_sync_" + k), sd = r.at("d2h_sync_" + k);
      std::printf(" %9.2f %9.2f %8.2fx %8.2fx", sh, sd, sh / mc, sd / mc);
    }
    if (pipe && r.count("pipeline_" + k)) {
      const double two = r.at("pipeline_" + k);
      std::printf(" %9.2f %8.2fx %8.2fx", two, h2d / two, d2h / two);
    }
    std::printf("\n");
  }
  std::printf("\n");
  return met;
}

}  // namespace

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
  if (max_mib < 1 || max_mib > 4096) {
    std::fprintf(stderr, "copy_bench: --max-mib must be 1 to 4096\n");
    return 2;
  }
  std::printf("Copies through the data area vs memcpy, GB/s (median), timed as bandwidthTest does\n");
  std::printf("%s\n\n", machine_line().c_str());

  // Two pinned buffers of the largest size need 2/3 of a data area (pinned
  // memory may take three quarters of it): give the VM four times the size.
  Figures pinned;
  {
    Vgpud vgpud({"--data-area-mib", std::to_string(4 * max_mib)});
    if (!vgpud.ok()) return 1;
    pinned = vgpud.run("copier", bench_program("copy_bw"), {std::to_string(max_mib), "pinned"});
    if (pinned.empty()) return 1;
  }
  Figures pageable;
  {
    Vgpud vgpud;
    if (!vgpud.ok()) return 1;
    pageable = vgpud.run("copier", bench_program("copy_bw"), {std::to_string(max_mib), "pageable"});
    if (pageable.empty()) return 1;
  }
  const bool met = table("Pinned host memory (cudaMallocHost), one copy on the host; cudaMemcpyAsync:", pinned, max_mib);
  const bool pageable_met =
      table("Pageable host memory (malloc), staged through the data area, two copies; cudaMemcpy:", pageable,
            max_mib);
  report("pinned, both directions, every size from 1 MiB up", met ? "yes" : "no", ">= 0.8x", met);
  report("pageable, both directions, every size from 1 MiB up", pageable_met ? "yes" : "no", "",
         true);
  return met || quick ? 0 : 1;  // --quick is a smoke run: figures, no verdict
}
