// vgpu-smi: nvidia-smi for a VM's virtual GPU. Shows what the VM sees of the
// GPU (its memory cap and use, its own share of the GPU) and the GPU-time
// budget of the student the VM belongs to: how much is left, when it renews,
// and what happens when it is spent. Runs in the guest, over the same
// channel as CUDA programs (/dev/vgpu in a VM, vgpu-run's socket in a
// simulated one).
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <string>

#include <CLI/CLI.hpp>

#include "report.h"
#include "snapshot.h"
#include "version.h"

namespace {
// nvidia-smi's exit status when it cannot talk to the driver.
constexpr int kCannotReach = 9;
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vgpu-smi: the VM's virtual GPU and the student's GPU-time budget"};
  app.set_version_flag("--version", vgpu::cli::version_line("vgpu-smi"));
  app.footer(
      "Exit status: 0 shown; 9 vgpud cannot be reached from this VM or does not admit it "
      "(as nvidia-smi when it cannot talk to the driver).");
  std::string output = "table";
  int sample_ms = 200;
  app.add_option("-o,--output", output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  app.add_option("--sample-ms", sample_ms,
                 "how long the VM's GPU utilization is sampled over, in milliseconds")
      ->check(CLI::Range(10, 10000))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  vgpu::smi::Snapshot s;
  std::string why;
  if (!ok(vgpu::smi::take_snapshot(sample_ms, &s, &why))) {
    std::fprintf(stderr, "vgpu-smi: %s\n", why.c_str());
    return kCannotReach;
  }
  const std::string text = output == "json"
                               ? vgpu::smi::format_json(s)
                               : vgpu::smi::format_table(s, std::time(nullptr), VGPU_VERSION);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}
