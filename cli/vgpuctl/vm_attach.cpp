#include <algorithm>
#include <cstdio>

#include "shmem_xml.h"
#include "virt_connection.h"
#include "vm_commands.h"

namespace vgpu::ctl {
namespace {

int fail(const std::string& why) {
  std::fprintf(stderr, "vgpuctl: %s\n", why.c_str());
  return 1;
}

int fail(const Result& r) { return fail(r.text()); }

bool valid_vm_name(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      return false;
  }
  return true;
}

// vgpud's VM attached to domain `uuid` (an empty name if none).
bool attached_vm(Context& ctx, const std::string& uuid_or_name, json* vm) {
  json vms;
  if (!ctx.call({{"op", "vm.list"}}, &vms)) return false;
  *vm = json::object();
  for (const json& v : vms) {
    const std::string uuid = v.value("domain_uuid", "");
    if (!uuid.empty() && (uuid == uuid_or_name || v.value("name", "") == uuid_or_name)) *vm = v;
  }
  return true;
}

}  // namespace

int attach_domain(Context& ctx, const std::string& domain, const std::string& student,
                  const std::string& vm_flag) {
  std::unique_ptr<virt::Connection> conn;
  if (Result r = virt::Connection::open(ctx.libvirt_uri, &conn); !r.ok()) return fail(r);
  virt::Domain d;
  if (Result r = conn->find(domain, &d); !r.ok()) return fail(r);
  const virt::DomainInfo info = d.info();
  if (!info.persistent) {
    return fail("domain '" + info.name +
                "' is transient: vgpu attaches to persistent domains (virsh define)");
  }
  virt::DomainXml parsed;
  if (Result r = d.definition(&parsed); !r.ok()) return fail(r);
  const std::string vm = vm_flag.empty() ? info.name : vm_flag;
  if (!parsed.devices.empty()) {
    // Attaching again as it is attached changes nothing and succeeds (scripts
    // may run it twice); any other attachment is refused.
    json bound;
    if (!attached_vm(ctx, info.uuid, &bound)) return 1;
    const bool same = parsed.devices.size() == 1 && parsed.devices[0].vm == vm &&
                      bound.value("name", "") == vm && bound.value("student", "") == student;
    if (!same) {
      return fail("domain '" + info.name + "' is already attached (it has the vgpu device " +
                  parsed.devices[0].name + "): detach it first");
    }
    if (ctx.json_output) {
      std::printf("%s\n", json({{"domain", info.name},
                                {"uuid", info.uuid},
                                {"vm", vm},
                                {"student", student},
                                {"changed", false}})
                              .dump(2)
                              .c_str());
      return 0;
    }
    std::printf("domain %s is already attached to vgpu as VM %s for student %s: nothing changed\n",
                info.name.c_str(), vm.c_str(), student.c_str());
    return 0;
  }
  if (!valid_vm_name(vm)) {
    return fail("domain name '" + vm +
                "' is not a valid vgpu VM name (1 to 63 of A-Z a-z 0-9 . _ -): choose one with --vm");
  }
  // vgpud checks the student and the VM first (changing nothing) and says
  // where it serves the VM; then the domain; then the binding.
  const json request = {{"op", "vm.attach"}, {"vm", vm}, {"uuid", info.uuid}, {"student", student}};
  json checked = request;
  checked["dry_run"] = true;
  json result;
  if (!ctx.call(checked, &result)) return 1;
  const std::string socket = result.value("socket", "");
  const std::string device = virt::device_xml(vm, socket);
  if (Result r = conn->add_device(d, device); !r.ok()) return fail(r);
  if (!ctx.call(request, &result)) {
    if (Result undo = conn->remove_device(d, std::string(virt::kDevicePrefix) + vm); !undo.ok()) {
      std::fprintf(stderr, "vgpuctl: and the device could not be taken out again: %s\n",
                   undo.text().c_str());
    }
    return 1;
  }
  // A running domain gets the device now (PCI hot-plug); where that fails,
  // at its next start.
  bool restart = false, plugged = false;
  Result plug;
  if (virt::has_process(info.state)) {
    plug = conn->plug(d, device);
    plugged = plug.ok();
    restart = !plugged;
  }
  if (ctx.json_output) {
    std::printf("%s\n", json({{"domain", info.name},
                              {"uuid", info.uuid},
                              {"vm", vm},
                              {"student", student},
                              {"socket", socket},
                              {"device", device},
                              {"plugged", plugged},
                              {"restart_needed", restart}})
                            .dump(2)
                            .c_str());
    return 0;
  }
  std::printf("attached domain %s (%s) to vgpu as VM %s for student %s\n", info.name.c_str(),
              info.uuid.c_str(), vm.c_str(), student.c_str());
  std::printf("device: ivshmem-doorbell, server %s, %d MSI vector\n", socket.c_str(),
              virt::kMsiVectors);
  if (plugged) {
    std::printf("the domain is %s: the device was plugged in now (the guest's vgpu module "
                "takes it up)\n",
                std::string(virt::state_name(info.state)).c_str());
  } else if (restart) {
    std::printf(
        "the domain is %s but %s: shut it down and start it again for the device to "
        "appear\n",
        std::string(virt::state_name(info.state)).c_str(), plug.text().c_str());
  } else {
    std::printf("the device appears when the domain starts\n");
  }
  if (result.contains("warning")) {
    std::fprintf(stderr, "vgpuctl: warning: %s\n", result.value("warning", "").c_str());
  }
  return 0;
}

int detach_domain(Context& ctx, const std::string& domain) {
  std::unique_ptr<virt::Connection> conn;
  if (Result r = virt::Connection::open(ctx.libvirt_uri, &conn); !r.ok()) return fail(r);
  virt::Domain d;
  const Result found = conn->find(domain, &d);
  json row;
  if (!found.ok()) {
    // Gone from libvirt (undefined): forget the attachment in vgpu.
    if (!found.is(Result::Code::kNotFound) || !attached_vm(ctx, domain, &row)) return fail(found);
    if (row.empty()) return fail(found);
    json result;
    const std::string vm = row.value("name", "");
    if (!ctx.call({{"op", "vm.detach"}, {"vm", vm}}, &result)) return 1;
    std::printf("domain %s is not defined at %s: detached VM %s in vgpu only\n", domain.c_str(),
                conn->uri().c_str(), vm.c_str());
    return 0;
  }
  const virt::DomainInfo info = d.info();
  virt::DomainXml parsed;
  if (Result r = d.definition(&parsed); !r.ok()) return fail(r);
  if (!attached_vm(ctx, info.uuid, &row)) return 1;
  if (parsed.devices.empty() && row.empty()) {
    // Detaching what is not attached leaves it so and succeeds (idempotent).
    if (ctx.json_output) {
      std::printf("%s\n", json({{"domain", info.name}, {"uuid", info.uuid}, {"changed", false}})
                              .dump(2)
                              .c_str());
      return 0;
    }
    std::printf("domain %s is not attached to vgpu: nothing changed\n", info.name.c_str());
    return 0;
  }
  const std::string vm = row.empty() ? parsed.devices[0].vm : row.value("name", "");
  json result;
  if (!row.empty() &&
      !ctx.call({{"op", "vm.detach"}, {"vm", vm}, {"dry_run", true}}, &result))
    return 1;
  for (const virt::VgpuDevice& dev : parsed.devices) {
    if (Result r = conn->remove_device(d, dev.name); !r.ok()) return fail(r);
  }
  if (!row.empty() && !ctx.call({{"op", "vm.detach"}, {"vm", vm}}, &result)) return 1;
  const bool running = virt::has_process(info.state);
  if (ctx.json_output) {
    std::printf("%s\n", json({{"domain", info.name},
                              {"uuid", info.uuid},
                              {"vm", vm},
                              {"student", row.value("student", "")},
                              {"devices_removed", parsed.devices.size()},
                              {"restart_needed", running}})
                            .dump(2)
                            .c_str());
    return 0;
  }
  const std::string student = row.value("student", "");
  std::printf("detached domain %s from vgpu (VM %s%s)\n", info.name.c_str(), vm.c_str(),
              student.empty() ? "" : (", student " + student + " unbound").c_str());
  if (running) {
    std::printf("the domain is %s: it keeps the GPU until it shuts down\n",
                std::string(virt::state_name(info.state)).c_str());
  }
  return 0;
}

int allow_domain(Context& ctx, const std::string& domain, const std::string& course, bool allow) {
  // A name is looked up in libvirt; a UUID is taken as it is (the domain may
  // be defined later).
  std::string uuid = domain, name = domain;
  const bool is_uuid = domain.size() == 36 && std::count(domain.begin(), domain.end(), '-') == 4;
  if (!is_uuid) {
    std::unique_ptr<virt::Connection> conn;
    if (Result r = virt::Connection::open(ctx.libvirt_uri, &conn); !r.ok()) return fail(r);
    virt::Domain d;
    if (Result r = conn->find(domain, &d); !r.ok()) return fail(r);
    const virt::DomainInfo info = d.info();
    uuid = info.uuid;
    name = info.name;
  }
  return ctx.run({{"op", allow ? "course.domain.allow" : "course.domain.disallow"},
                  {"course", course},
                  {"uuid", uuid}},
                 [&](const json&) {
                   std::printf("%s\n", (allow ? "course " + course + "'s teachers may attach domain " + name
                                              : "course " + course + "'s teachers may no longer attach domain " +
                                                    name)
                                             .c_str());
                 });
}

}  // namespace vgpu::ctl
