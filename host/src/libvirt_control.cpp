#include "vgpu/host/libvirt_control.h"

#include <spdlog/spdlog.h>

#include <ctime>

#include "admin_ops.h"
#include "qemu_peer.h"
#include "vgpu/policy/units.h"

namespace vgpu::host {
namespace {

int64_t unix_now() { return static_cast<int64_t>(std::time(nullptr)); }

bool watch_uri(const std::string& uri) { return !uri.empty() && uri != "none"; }

}  // namespace

LibvirtControl::LibvirtControl(policy::Store* store, VmHooks hooks, std::string uri,
                               virt::WatcherOptions watcher)
    : store_(store), hooks_(std::move(hooks)), uri_(std::move(uri)) {
  if (watch_uri(uri_)) {
    watcher.uri = uri_;
    watcher_ = std::make_unique<virt::DomainWatcher>(std::move(watcher), this);
    sessions_worker_ = std::make_unique<SerialWorker>();
    replug_ = std::make_unique<DeviceReplug>(uri_);
  }
}

LibvirtControl::~LibvirtControl() { stop(); }

void LibvirtControl::start() {
  int ended = 0;
  // A vgpud that stopped without ending its sessions (killed): their QEMUs
  // lost the connection with it, so they ended then.
  if (store_->end_open_sessions(unix_now(), "vgpud restarted", &ended).ok() && ended > 0) {
    spdlog::info("vgpud: ended {} VM session(s) a previous vgpud left open", ended);
  }
  reload();
  std::vector<policy::DomainAttachment> attached;
  {
    std::lock_guard lock(mu_);
    for (const auto& [uuid, a] : by_uuid_) attached.push_back(a);
  }
  for (const auto& a : attached) {
    if (const Result r = hooks_.serve(a.vm); !r.ok()) {
      // The others are served; this one's domain cannot start until it is fixed.
      spdlog::error("vm {}: attached to domain {} but cannot be served: {}", a.vm, a.uuid,
                    r.text());
    }
  }
  if (watcher_) {
    spdlog::info("vgpud: watching libvirt domains at {} ({} attached)", uri_, attached.size());
    watcher_->start();
  }
}

void LibvirtControl::stop() {
  if (replug_) replug_->stop();
  if (watcher_) watcher_->stop();
  if (sessions_worker_) sessions_worker_->stop();  // what was asked for is written
  std::lock_guard lock(mu_);
  for (const auto& [uuid, s] : sessions_) {
    const uint64_t gpu = hooks_.gpu_ns(s.tenant);
    // Best effort: a session left open is ended when vgpud starts again.
    (void)store_->end_session(s.id, unix_now(), "vgpud stopped",
                              gpu > s.gpu_at_start ? gpu - s.gpu_at_start : 0);
  }
  sessions_.clear();
}

void LibvirtControl::reload() {
  std::vector<policy::DomainAttachment> all;
  if (!store_->list_attachments(&all).ok()) {
    spdlog::error("vgpud: cannot read the VMs attached to libvirt domains from the database");
    return;
  }
  std::lock_guard lock(mu_);
  by_uuid_.clear();
  for (auto& a : all) by_uuid_[a.uuid] = std::move(a);
}

void LibvirtControl::after_request(const nlohmann::json& request, nlohmann::json* answer) {
  const std::string op = admin::op_of(request);
  if ((op != "vm.attach" && op != "vm.detach") || !admin::field(*answer, "ok", false)) return;
  const std::string vm = admin::field<std::string>(request, "vm", "");
  const bool dry_run = admin::field(request, "dry_run", false);
  nlohmann::json& result = (*answer)["result"];
  if (!result.is_object()) result = nlohmann::json::object();
  if (op == "vm.attach") {
    result["socket"] = hooks_.socket_path(vm);
    if (dry_run) return;
    if (const Result r = hooks_.serve(vm); !r.ok()) {
      spdlog::error("vm {}: attached but cannot be served: {}", vm, r.text());
      result["warning"] = "vgpud cannot serve it: " + r.text();
    }
    spdlog::info("vm {}: attached to domain {}; serving {}", vm,
                 admin::field<std::string>(request, "uuid", ""),
                 hooks_.socket_path(vm));
  } else if (!dry_run) {
    // A running domain keeps the channel its QEMU has until it stops.
    hooks_.unserve(vm);
    spdlog::info("vm {}: detached; its socket is gone", vm);
  }
  reload();
}

bool LibvirtControl::admit(const std::string& vm, int pid, std::string* why) {
  std::string uuid;
  {
    std::lock_guard lock(mu_);
    for (const auto& [u, a] : by_uuid_) {
      if (a.vm == vm) uuid = u;
    }
  }
  if (uuid.empty()) return true;  // not a libvirt domain vgpu knows
  const std::string runs = virt::qemu_domain_uuid(pid);
  if (!runs.empty() && runs != uuid) {
    *why = "QEMU (pid " + std::to_string(pid) + ") runs domain " + runs + ", not domain " + uuid +
           " attached as VM " + vm;
    spdlog::warn("vm {}: turned away: {}", vm, *why);
    return false;
  }
  {
    std::lock_guard lock(mu_);
    qemu_pid_[vm] = pid;
  }
  // A domain's QEMU connects before libvirt reports the start, and a running
  // domain the vgpu device was plugged into (`vgpuctl vm attach`) reports
  // none: its session begins now.
  if (watcher_) post_begin(uuid, vm, "has its QEMU connected");
  return true;
}

void LibvirtControl::connected(const std::vector<virt::DomainInfo>& domains) {
  spdlog::info("vgpud: connected to libvirt at {} ({} domain(s))", uri_, domains.size());
  reload();
  std::unordered_map<std::string, const virt::DomainInfo*> by_uuid;
  for (const auto& d : domains) by_uuid[d.uuid] = &d;
  std::vector<std::pair<std::string, std::string>> attached;  // uuid, VM
  std::vector<std::string> open;
  {
    std::lock_guard lock(mu_);
    for (const auto& [uuid, a] : by_uuid_) attached.emplace_back(uuid, a.vm);
    for (const auto& [uuid, s] : sessions_) open.push_back(uuid);
  }
  // What happened while vgpud was not watching.
  for (const auto& [uuid, vm] : attached) {
    auto it = by_uuid.find(uuid);
    if (it == by_uuid.end()) {
      spdlog::warn("vgpud: domain {} (attached as VM {}) is not defined at {}", uuid, vm, uri_);
      continue;
    }
    if (!virt::has_process(it->second->state)) continue;
    post_begin(uuid, it->second->name, "runs");
    replug_if_lost(uuid, vm);
  }
  for (const std::string& uuid : open) {
    auto it = by_uuid.find(uuid);
    const auto state = it == by_uuid.end() ? virt::DomainState::kNoState : it->second->state;
    if (!virt::has_process(state)) {
      post_end(uuid, it == by_uuid.end() ? "" : it->second->name,
               "stopped while libvirt was unreachable", state);
    }
  }
}

void LibvirtControl::replug_if_lost(const std::string& uuid, const std::string& vm) {
  // Its QEMU's device was served by a previous vgpud (ivshmem never connects
  // again): the device goes out and comes in again.
  if (qemu_connected(vm, uuid)) return;
  replug_->request({uuid, vm, hooks_.socket_path(vm),
                    [this, vm, uuid] { return !qemu_connected(vm, uuid); },
                    [this, vm] {
                      if (hooks_.expect_replug) hooks_.expect_replug(vm);
                    }});
}

bool LibvirtControl::qemu_connected(const std::string& vm, const std::string& uuid) {
  int pid = -1;
  {
    std::lock_guard lock(mu_);
    if (auto it = qemu_pid_.find(vm); it != qemu_pid_.end()) pid = it->second;
  }
  return pid > 0 && virt::qemu_domain_uuid(pid) == uuid;
}

void LibvirtControl::unreachable(const std::string& why, int failures,
                                 std::chrono::milliseconds retry_in) {
  const double seconds = static_cast<double>(retry_in.count()) / 1000.0;
  if (failures == 1) {
    spdlog::warn(
        "vgpud: libvirt at {} is unreachable: {}; the attached VMs are served all the same "
        "(their sessions are not recorded); retrying in {:.1f} s, then less often",
        uri_, why, seconds);
  } else if (failures % 20 == 0) {
    spdlog::info("vgpud: libvirt at {} is still unreachable ({} attempts): {}", uri_, failures,
                 why);
  } else {
    spdlog::debug("vgpud: libvirt at {}: attempt {} failed: {}; next in {:.1f} s", uri_,
                  failures, why, seconds);
  }
}

void LibvirtControl::lost(const std::string& why) {
  spdlog::warn("vgpud: lost libvirt at {} ({}); reconnecting; running VMs are served all the same",
               uri_, why);
}

void LibvirtControl::event(const virt::DomainEvent& e) {
  bool attached = false;
  std::string vm;     // the VM attached to this domain
  std::string other;  // a VM attached under this name to another domain
  {
    std::lock_guard lock(mu_);
    if (auto it = by_uuid_.find(e.uuid); it != by_uuid_.end()) {
      attached = true;
      vm = it->second.vm;
    }
    for (const auto& [uuid, a] : by_uuid_) {
      if (a.vm == e.name && uuid != e.uuid) other = uuid;
    }
  }
  switch (e.kind) {
    case virt::EventKind::kStarted:
      if (attached) {
        post_begin(e.uuid, e.name, "started");
      } else if (!other.empty()) {
        spdlog::warn("vgpud: domain {} ({}) started, but VM {} is attached to domain {}: "
                     "not this one (a reused name)",
                     e.name, e.uuid, e.name, other);
      }
      break;
    case virt::EventKind::kStopped:
      post_end(e.uuid, e.name, e.reason, e.state_now);
      break;
    case virt::EventKind::kResumed:
      // Paused when this vgpud started, its device could not be replugged then.
      if (attached) replug_if_lost(e.uuid, vm);
      break;
    case virt::EventKind::kUndefined:
      if (attached) {
        spdlog::info("vgpud: domain {} ({}) was undefined; it stays attached until "
                     "`vgpuctl vm detach` (defining it again with its UUID keeps its GPU)",
                     e.name, e.uuid);
      }
      break;
    case virt::EventKind::kDefined:
      if (attached) {
        if (const Result r = hooks_.serve(vm); !r.ok())
          spdlog::error("vm {}: cannot be served: {}", vm, r.text());
      }
      break;
    case virt::EventKind::kOther:
      break;
  }
}

void LibvirtControl::post_begin(const std::string& uuid, const std::string& name,
                                const char* how) {
  sessions_worker_->post([this, uuid, name, how] { begin_session(uuid, name, how); });
}

void LibvirtControl::post_end(const std::string& uuid, const std::string& name,
                              const std::string& reason, virt::DomainState now) {
  sessions_worker_->post([this, uuid, name, reason, now] { end_session(uuid, name, reason, now); });
}

void LibvirtControl::begin_session(const std::string& uuid, const std::string& name,
                                   const char* how) {
  policy::DomainAttachment a;
  {
    std::lock_guard lock(mu_);
    if (sessions_.count(uuid)) return;  // seen already (an event and a reconnection)
    auto it = by_uuid_.find(uuid);
    if (it == by_uuid_.end()) return;
    a = it->second;
  }
  // Only this thread adds sessions: none can appear while the row is written.
  Session s;
  s.tenant = a.tenant;
  s.vm = a.vm;
  s.gpu_at_start = hooks_.gpu_ns(a.tenant);
  if (!store_->begin_session(a.tenant, uuid, a.student_id, unix_now(), &s.id).ok()) {
    spdlog::error("vm {}: cannot record the start of its session in the database", a.vm);
    return;
  }
  spdlog::info("vm {}: domain {} ({}) {}: session {} ({})", a.vm, name, uuid, how, s.id,
               a.student.empty() ? "unassigned" : "student " + a.student);
  std::lock_guard lock(mu_);
  sessions_[uuid] = s;
}

void LibvirtControl::end_session(const std::string& uuid, const std::string& name,
                                 const std::string& reason, virt::DomainState now) {
  Session s;
  bool open = false;
  std::string vm;
  int pid = -1;
  {
    std::lock_guard lock(mu_);
    if (auto it = sessions_.find(uuid); it != sessions_.end()) {
      s = it->second;
      open = true;
      sessions_.erase(it);
      vm = s.vm;
    } else if (auto a = by_uuid_.find(uuid); a != by_uuid_.end()) {
      vm = a->second.vm;
    }
    if (auto p = qemu_pid_.find(vm); p != qemu_pid_.end()) pid = p->second;
  }
  if (vm.empty()) return;  // not a domain vgpu serves
  // QEMU hanging up has normally released everything already; this makes
  // sure, unless the domain runs again (a new QEMU holds the channel then).
  if (!virt::has_process(now)) hooks_.release(vm, pid);
  if (!open) return;
  const uint64_t gpu = hooks_.gpu_ns(s.tenant);
  const uint64_t used = gpu > s.gpu_at_start ? gpu - s.gpu_at_start : 0;
  if (!store_->end_session(s.id, unix_now(), reason, used).ok()) {
    spdlog::error("vm {}: cannot record the end of session {} in the database", vm, s.id);
  }
  spdlog::info("vm {}: domain {} ({}) stopped ({}): session {} ended ({} of GPU time); its device "
               "state released",
               vm, name, uuid, reason, s.id, policy::format_duration(static_cast<int64_t>(used)));
}

}  // namespace vgpu::host
