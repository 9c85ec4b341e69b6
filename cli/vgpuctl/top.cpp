// vgpuctl top: polls the daemon and shows, per connected VM, its share of the
// GPU over the last interval, its queue depth and the budget it has left.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "context.h"
#include "table.h"
#include "vgpu/policy/units.h"

namespace vgpu::ctl {
namespace {

void print_frame(const Context& ctx, const json& now, const json& before, bool clear) {
  std::map<std::string, uint64_t> previous;
  for (const json& t : before["tenants"]) previous[t["vm"]] = t["gpu_ns"].get<uint64_t>();
  const double wall =
      static_cast<double>(now["now_ns"].get<int64_t>() - before["now_ns"].get<int64_t>());
  Table table({text_column("VM", "vm"), number_column("GPU", "gpu"),
               text_column("STUDENT", "student"), text_column("COURSE", "course"),
               text_column("STATE", "state"), number_column("GPU SHARE", "gpu_share"),
               number_column("QUEUED", "queued"), number_column("USED", "spent_ns"),
               text_column("QUOTA", "quota"), number_column("LEFT", "left_ns")});
  double busy = 0;
  for (const json& t : now["tenants"]) {
    const uint64_t gpu = t["gpu_ns"].get<uint64_t>();
    auto it = previous.find(t["vm"]);
    const double delta =
        static_cast<double>(gpu - (it == previous.end() ? gpu : std::min(gpu, it->second)));
    busy += delta;
    const double fraction = wall > 0 ? delta / wall : 0.0;
    char share[16];
    std::snprintf(share, sizeof share, "%.0f%%", 100.0 * fraction);
    const int64_t left = t["left_ns"].get<int64_t>();
    const std::string student = t["student"];
    table.add({t["vm"], t.contains("gpu") ? Cell(t["gpu"]) : Cell(nullptr),
               student.empty() ? "(unassigned)" : student, optional_cell(t["course"]), t["state"],
               Cell(share, fraction), t["queued"],
               Cell(policy::format_duration(t["spent_ns"].get<int64_t>()), t["spent_ns"]),
               t["quota"],
               left < 0 ? Cell("-", nullptr) : Cell(policy::format_duration(left), left)});
  }
  if (ctx.format == Format::kJson) {  // one frame a line, so that frames can be read as they come
    std::printf("%s\n", table.to_json().dump().c_str());
    std::fflush(stdout);
    return;
  }
  if (!ctx.for_people()) {
    ctx.print(table);
    std::fflush(stdout);
    return;
  }
  if (clear) std::printf("\033[H\033[2J");
  std::printf("vgpu top: %zu VM(s), GPU busy %.0f%% over the last %.1f s\n\n",
              now["tenants"].size(), wall > 0 ? 100.0 * busy / wall : 0.0, wall / 1e9);
  ctx.print(table);
  std::fflush(stdout);
}

}  // namespace

void add_top_command(CLI::App& app, Context& ctx) {
  auto* top = app.add_subcommand("top", "live per-VM GPU share, queue depth and budget left");
  static double interval = 1.0;
  static int count = 0;
  top->add_option("--interval", interval, "seconds between refreshes")
      ->check(CLI::Range(0.1, 60.0));
  top->add_option("--count", count, "stop after this many refreshes (default: until Ctrl-C)")
      ->check(CLI::NonNegativeNumber);
  add_output_options(top, ctx);  // csv: a table a refresh; json: an array a line
  top->callback([&ctx] {
    ctx.action = [&ctx] {
      const bool tty = isatty(STDOUT_FILENO) != 0;
      json before;
      if (!ctx.call({{"op", "top"}}, &before)) return 1;
      for (int i = 0; count == 0 || i < count; ++i) {
        std::this_thread::sleep_for(std::chrono::duration<double>(interval));
        json now;
        if (!ctx.call({{"op", "top"}}, &now)) return 1;
        if (ctx.json_output)
          std::printf("%s\n", now.dump().c_str());
        else
          print_frame(ctx, now, before, tty);
        before = now;
      }
      return 0;
    };
  });
}

}  // namespace vgpu::ctl
