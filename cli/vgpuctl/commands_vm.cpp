// vgpuctl vm attach|detach|list|set|sessions (docs/libvirt.md).
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "table.h"
#include "vgpu/policy/units.h"
#include "virt_connection.h"
#include "vm_commands.h"

namespace vgpu::ctl {
namespace {

// Each connected VM's share of the GPU over `seconds` (two samples of `top`).
bool gpu_shares(Context& ctx, double seconds, std::map<std::string, double>* out) {
  json before, after;
  if (!ctx.call({{"op", "top"}}, &before)) return false;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  if (!ctx.call({{"op", "top"}}, &after)) return false;
  std::map<std::string, uint64_t> previous;
  for (const json& t : before["tenants"]) previous[t["vm"]] = t["gpu_ns"].get<uint64_t>();
  const double wall =
      static_cast<double>(after["now_ns"].get<int64_t>() - before["now_ns"].get<int64_t>());
  for (const json& t : after["tenants"]) {
    const uint64_t gpu = t["gpu_ns"].get<uint64_t>();
    auto it = previous.find(t["vm"]);
    const uint64_t base = it == previous.end() ? gpu : std::min(gpu, it->second);
    (*out)[t["vm"]] = wall > 0 ? static_cast<double>(gpu - base) / wall : 0.0;
  }
  return true;
}

std::string percent(double fraction) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * fraction);
  return buf;
}

int list_vms(Context& ctx, double interval) {
  json vms;
  if (!ctx.call({{"op", "vm.list"}}, &vms)) return 1;
  std::vector<virt::DomainInfo> domains;
  std::unique_ptr<virt::Connection> conn;
  Result listed = virt::Connection::open(ctx.libvirt_uri, &conn);
  if (listed.ok()) listed = conn->list(&domains);
  if (!listed.ok()) {
    std::fprintf(stderr, "vgpuctl: %s; showing vgpud's VMs only\n", listed.text().c_str());
  }
  std::map<std::string, double> shares;
  const bool sampled = ctx.db.empty() && interval > 0 && gpu_shares(ctx, interval, &shares);

  json rows = json::array();
  auto share_of = [&](const std::string& vm) -> json {
    if (!sampled || vm.empty()) return nullptr;
    auto it = shares.find(vm);
    return it == shares.end() ? json(0.0) : json(it->second);  // not connected: none
  };
  std::map<std::string, const json*> by_uuid;
  for (const json& v : vms) {
    if (!v.value("domain_uuid", "").empty()) by_uuid[v["domain_uuid"]] = &v;
  }
  std::map<std::string, bool> shown;
  for (const virt::DomainInfo& d : domains) {
    auto it = by_uuid.find(d.uuid);
    const json* v = it == by_uuid.end() ? nullptr : it->second;
    const std::string vm = v ? v->value("name", "") : "";
    if (v) shown[vm] = true;
    rows.push_back({{"domain", d.name},
                    {"uuid", d.uuid},
                    {"state", std::string(virt::state_name(d.state))},
                    {"vm", vm},
                    {"attached", v != nullptr},
                    {"student", v ? v->value("student", "") : ""},
                    {"placement", v ? v->value("placement", "") : ""},
                    {"gpu_share", share_of(vm)}});
  }
  // vgpud's VMs that are no domain here: simulated VMs, other hosts, or a
  // domain that is no longer defined.
  for (const json& v : vms) {
    const std::string vm = v.value("name", "");
    if (shown.count(vm)) continue;
    const std::string uuid = v.value("domain_uuid", "");
    rows.push_back({{"domain", ""},
                    {"uuid", uuid},
                    {"state", uuid.empty() ? "" : "not defined"},
                    {"vm", vm},
                    {"attached", !uuid.empty()},
                    {"student", v.value("student", "")},
                    {"placement", v.value("placement", "")},
                    {"gpu_share", share_of(vm)}});
  }
  if (ctx.json_output) {
    std::printf("%s\n", rows.dump(2).c_str());
    return 0;
  }
  Table t({text_column("DOMAIN", "domain"), text_column("STATE", "state"),
           text_column("VGPU VM", "vm"), text_column("STUDENT", "student"),
           text_column("PLACEMENT", "placement"), number_column("GPU SHARE", "gpu_share"),
           text_column("UUID", "uuid")});
  for (const json& r : rows) {
    const std::string vm = r["vm"], student = r["student"];
    Cell share("-", nullptr);
    if (r["gpu_share"].is_number()) share = {percent(r["gpu_share"].get<double>()), r["gpu_share"]};
    t.add({optional_cell(r["domain"]), optional_cell(r["state"]), optional_cell(vm),
           vm.empty() ? Cell("-", nullptr) : Cell(student.empty() ? "(unassigned)" : student),
           optional_cell(r["placement"]), share, optional_cell(r["uuid"])});
  }
  ctx.print(t);
  return 0;
}

int list_sessions(Context& ctx, const std::string& vm, int64_t since) {
  json req = {{"op", "vm.sessions"}, {"since", since}};
  if (!vm.empty()) req["vm"] = vm;
  return ctx.run(req, [&ctx](const json& r) {
    Table t({number_column("SESSION", "session"), text_column("VM", "vm"),
             text_column("STARTED", "started_at"), text_column("ENDED", "ended_at"),
             text_column("HOW", "end_reason"), number_column("GPU TIME", "gpu_ns"),
             text_column("DOMAIN UUID", "domain_uuid")});
    for (const json& s : r) {
      const int64_t ended = s["ended_at"].get<int64_t>();
      t.add({s["id"], s["vm"], time_cell(s["started_at"].get<int64_t>()),
             ended ? time_cell(ended) : Cell("(running)", nullptr),
             ended ? optional_cell(s["end_reason"]) : Cell("-", nullptr),
             Cell(policy::format_duration(s["gpu_ns"].get<int64_t>()), s["gpu_ns"]),
             s["domain_uuid"]});
    }
    ctx.print(t);
  });
}

}  // namespace

void add_vm_commands(CLI::App& app, Context& ctx) {
  auto* vm = app.add_subcommand(
      "vm", "VMs: libvirt domains attached to vgpu, and every VM vgpud knows (admins)");
  vm->require_subcommand(1);
  static std::string domain, student, name, since;
  static double interval = 0.5;

  auto* attach = vm->add_subcommand(
      "attach", "give a libvirt domain the GPU: add the vgpu device to its definition (and plug "
                "it into the domain if it runs) and bind it to a student");
  attach->add_option("DOMAIN", domain, "the domain: name or UUID")->required();
  attach->add_option("--student", student, "the student it belongs to")->required();
  attach->add_option("--vm", name, "the VM's name in vgpu (default: the domain's name)")
      ->check(name_validator("VM"));
  attach->callback([&ctx] { ctx.action = [&ctx] { return attach_domain(ctx, domain, student, name); }; });

  static std::string course;
  for (const bool allow : {true, false}) {
    auto* sub = vm->add_subcommand(
        allow ? "allow" : "disallow",
        allow ? "let a course's teachers attach a libvirt domain (admins; vgpud plugs into it as root)"
              : "no longer let a course's teachers attach a domain (attachments made stay)");
    sub->add_option("DOMAIN", domain, "the domain: name or UUID")->required();
    sub->add_option("--course", course, "the course")->required();
    sub->callback([&ctx, allow] {
      ctx.action = [&ctx, allow] { return allow_domain(ctx, domain, course, allow); };
    });
  }

  auto* detach = vm->add_subcommand(
      "detach", "take the GPU from a libvirt domain: remove the vgpu device, unbind its student");
  detach->add_option("DOMAIN", domain, "the domain: name or UUID")->required();
  detach->callback([&ctx] { ctx.action = [&ctx] { return detach_domain(ctx, domain); }; });

  auto* list = vm->add_subcommand(
      "list", "every domain on the libvirt connection and every VM vgpud knows: binding, state, "
              "GPU share");
  list->add_option("--interval", interval,
                   "seconds over which the GPU share is measured (0: do not measure)")
      ->check(CLI::Range(0.0, 60.0));
  add_output_options(list, ctx);
  list->callback([&ctx] { ctx.action = [&ctx] { return list_vms(ctx, interval); }; });

  static std::string placement;
  auto* set =
      vm->add_subcommand("set", "a VM's own settings (admins, or its course's teacher; audited)");
  set->add_option("VM", name, "the VM")->required();
  set->add_option("--placement", placement,
                  "which GPU of its host it goes to: spread, pack, or inherit (its student's, "
                  "course's or the host's); from its next placement")
      ->required()
      ->check(CLI::IsMember({"spread", "pack", "inherit"}));
  set->callback([&ctx] {
    ctx.action = [&ctx] {
      return ctx.run({{"op", "vm.set"}, {"vm", name}, {"placement", placement}}, [](const json&) {
        std::printf("VM %s: placement %s\n", name.c_str(), placement.c_str());
      });
    };
  });

  auto* sessions = vm->add_subcommand(
      "sessions", "each run of the attached domains: when it started and ended, and how");
  sessions->add_option("VM", name, "only this VM");
  sessions->add_option("--since", since, "only sessions started since DATE");
  add_output_options(sessions, ctx);
  sessions->callback([&ctx] {
    ctx.action = [&ctx] {
      return list_sessions(ctx, name, since.empty() ? 0 : parse_date_or_die(since, false));
    };
  });
}

}  // namespace vgpu::ctl
