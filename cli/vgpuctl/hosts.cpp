// vgpuctl hosts: the hosts that share the database (one vgpud each), and
// the load of each of their GPUs, as each host last reported it (at every
// usage flush, about each second). What a cloud scheduler would read to
// place VMs on hosts (docs/scale-out.md). One row per GPU.
#include <string>

#include "context.h"
#include "table.h"
#include "vgpu/policy/units.h"

namespace vgpu::ctl {
namespace {

uint64_t u64(const json& g, const char* key) {
  return g.contains(key) && g[key].is_number_unsigned() ? g[key].get<uint64_t>() : 0;
}

Cell bytes(uint64_t b) { return Cell(policy::format_bytes(b), b); }

Table hosts_table(const json& hosts) {
  Table table({text_column("HOST", "host"), text_column("BACKEND", "backend"),
               number_column("SEEN", "seen_s_ago"), number_column("GPU", "gpu"),
               text_column("NAME", "name"), number_column("VMS", "vms"),
               number_column("MEMORY", "memory_total"), number_column("USED", "device_bytes"),
               number_column("COMMITTED", "committed_memory"),
               number_column("WEIGHT", "committed_weight"), number_column("QUEUED", "queued")});
  for (const json& h : hosts) {
    const int64_t ago = h.value("seen_s_ago", int64_t{0});
    const Cell seen(policy::format_duration(ago * 1000000000) + " ago", ago);
    const json gpus = h.value("gpus", json::array());
    if (gpus.empty()) {
      table.add({h.value("name", ""), h.value("backend", ""), seen, nullptr, nullptr, nullptr,
                 nullptr, nullptr, nullptr, nullptr, nullptr});
    }
    for (const json& g : gpus) {
      table.add({h.value("name", ""), h.value("backend", ""), seen, u64(g, "index"),
                 g.value("name", ""), u64(g, "vms"), bytes(u64(g, "memory_total")),
                 bytes(u64(g, "device_bytes")),
                 g.contains("committed_memory") ? bytes(u64(g, "committed_memory")) : Cell(nullptr),
                 g.contains("committed_weight") ? Cell(u64(g, "committed_weight")) : Cell(nullptr),
                 u64(g, "queued")});
    }
  }
  return table;
}

}  // namespace

void add_hosts_command(CLI::App& app, Context& ctx) {
  auto* hosts = app.add_subcommand(
      "hosts",
      "the hosts sharing the database and their GPUs' load, as each last reported (with --db "
      "postgresql://..., every host of the department)");
  add_output_options(hosts, ctx);
  hosts->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "hosts.list"}}, [&ctx](const json& h) { ctx.print(hosts_table(h)); });
    };
  });
}

}  // namespace vgpu::ctl
