// vgpuctl status (admins): the daemon's own accounting. Per VM: what it holds
// on the device, what waits in its queue, and what it did wrong; the
// transport's and the process's counters. --json gives the daemon's answer
// as it is (daemon_status.h documents its fields).
#include <cstdio>
#include <string>

#include "context.h"
#include "table.h"
#include "vgpu/policy/units.h"

namespace vgpu::ctl {
namespace {

std::string n(const json& v) { return std::to_string(v.get<uint64_t>()); }

Table tenants_table(const json& s) {
  Table table({text_column("VM", "vm"), number_column("GPU", "gpu"),
               number_column("CHANNELS", "channels"), number_column("CONTEXTS", "contexts"),
               number_column("ALLOCS", "allocations"), number_column("MEMORY", "bytes"),
               number_column("STREAMS", "streams"), number_column("EVENTS", "events"),
               number_column("MODULES", "modules"), number_column("QUEUED", "queued"),
               number_column("MALFORMED", "malformed"), number_column("REFUSED", "refused"),
               number_column("FAILED", "work_failed"), number_column("PAUSED", "backpressure")});
  for (const json& vm : s["tenants"]) {
    const std::string name = vm["vm"];
    table.add({name.empty() ? "(tenant " + n(vm["tenant"]) + ")" : name,
               vm.contains("gpu") ? Cell(vm["gpu"]) : Cell(nullptr), vm["channels"], vm["contexts"],
               vm["allocations"],
               Cell(policy::format_bytes(vm["bytes"].get<uint64_t>()), vm["bytes"]), vm["streams"],
               vm["events"], vm["modules"], vm["queued"], vm["malformed"], vm["refused"],
               vm["work_failed"], vm["backpressure"]});
  }
  return table;
}

void print_status(const Context& ctx, const json& s) {
  const Table table = tenants_table(s);
  if (!ctx.for_people()) {  // -o csv|json: the per-VM table alone
    ctx.print(table);
    return;
  }
  const json& p = s["process"];
  const json& b = s["backend"];
  const json& t = s["transport"];
  const json& v = s["violations"];
  std::printf("vgpud pid %s, up %s, backend %s\n", n(p["pid"]).c_str(),
              policy::format_duration(static_cast<int64_t>(s["uptime_s"].get<double>() * 1e9)).c_str(),
              b["name"].get<std::string>().c_str());
  std::printf("process:    %s resident, %s descriptors, %s threads, %s worker processes\n",
              policy::format_bytes(p["rss_bytes"].get<uint64_t>()).c_str(), n(p["fds"]).c_str(),
              n(p["threads"]).c_str(), n(p["children"]).c_str());
  std::printf("device:     %s contexts, %s charged, %s commands queued\n", n(b["contexts"]).c_str(),
              policy::format_bytes(b["device_bytes"].get<uint64_t>()).c_str(), n(s["queued"]).c_str());
  std::printf("transport:  %s channels open (%s opened, %s closed), %s requests\n",
              n(t["channels"]).c_str(), n(t["opened"]).c_str(), n(t["closed"]).c_str(),
              n(t["requests"]).c_str());
  std::printf(
      "violations: %s malformed, %s refused, %s corrupt rings closed, %s stalled channels "
      "closed\n",
      n(v["malformed"]).c_str(), n(v["refused"]).c_str(), n(t["corrupt_rings"]).c_str(),
      n(t["stalled_channels"]).c_str());
  std::printf("held back:  %s back-pressure pauses, %s reply stalls; %s queued commands failed\n\n",
              n(v["backpressure"]).c_str(), n(t["reply_stalls"]).c_str(),
              n(v["work_failed"]).c_str());
  // Each GPU's load, where the host has several (a VM's GPU is in its row).
  const json gpus = s.value("gpus", json::array());
  for (const json& g : gpus.size() > 1 ? gpus : json::array()) {
    std::printf(
        "gpu %s:      %s VMs (weight %g), %s contexts, %s of %s charged (%s committed), "
        "%s busy, %s queued\n",
        n(g["index"]).c_str(), n(g["vms"]).c_str(), g.value("committed_weight", 0.0),
        n(g["contexts"]).c_str(), policy::format_bytes(g["device_bytes"].get<uint64_t>()).c_str(),
        policy::format_bytes(g["memory_total"].get<uint64_t>()).c_str(),
        policy::format_bytes(g.value("committed_memory", uint64_t{0})).c_str(),
        policy::format_duration(g["gpu_ns"].get<int64_t>()).c_str(), n(g["queued"]).c_str());
  }
  if (gpus.size() > 1) std::printf("\n");
  std::string waiting;
  for (const json& vm : s["tenants"]) {
    if (vm.value("waiting", uint64_t{0}) == 0) continue;
    waiting += (waiting.empty() ? "" : ", ") + vm["vm"].get<std::string>();
  }
  if (!waiting.empty()) {
    std::printf("not admitted (bound to no student; their calls are refused until one is bound, "
                "no reboot needed): %s\n\n",
                waiting.c_str());
  }
  if (table.empty()) {
    std::printf("no VM holds anything\n");
  } else {
    ctx.print(table);
  }
}

}  // namespace

void add_status_command(CLI::App& app, Context& ctx) {
  auto* status = app.add_subcommand(
      "status", "the daemon's own accounting (admins): what each VM holds, queues and did wrong");
  add_output_options(status, ctx);
  status->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "status"}}, [&ctx](const json& s) { print_status(ctx, s); });
    };
  });
}

}  // namespace vgpu::ctl
