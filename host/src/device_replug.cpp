#include "vgpu/host/device_replug.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "shmem_xml.h"

namespace vgpu::host {
namespace {

constexpr auto kRemovalLimit = std::chrono::seconds(30);  // the guest's time to let go
constexpr auto kRemovalPoll = std::chrono::milliseconds(200);  // a look at the live XML

bool runs(virt::DomainState s) {
  return s == virt::DomainState::kRunning || s == virt::DomainState::kBlocked;
}

}  // namespace

DeviceReplug::~DeviceReplug() { stop(); }

void DeviceReplug::request(ReplugJob job) {
  std::lock_guard lock(mu_);
  if (stop_ || std::find(busy_.begin(), busy_.end(), job.vm) != busy_.end()) return;
  busy_.push_back(job.vm);
  worker_.post([this, job = std::move(job)] { run(job); });
}

void DeviceReplug::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  // The job in hand calls back into the daemon (its still_lost and
  // before_plug reach the transport loop), which is destroyed after this:
  // wait for it. Jobs not begun end at their first look.
  worker_.stop();
}

bool DeviceReplug::stopping() const {
  std::lock_guard lock(mu_);
  return stop_;
}

std::vector<ReplugOutcome> DeviceReplug::outcomes() const {
  std::lock_guard lock(mu_);
  return outcomes_;
}

void DeviceReplug::run(const ReplugJob& job) {
  if (stopping()) return;
  ReplugOutcome out = replug(job);
  if (out.replugged) {
    spdlog::info("vm {}: {}", out.vm, out.what);
  } else {
    spdlog::warn("vm {}: not plugged in again: {}", out.vm, out.what);
  }
  // A call that failed on a dead connection: the next job opens another.
  if (conn_ && virConnectIsAlive(conn_->raw()) != 1) conn_.reset();
  std::lock_guard lock(mu_);
  busy_.erase(std::find(busy_.begin(), busy_.end(), job.vm));
  outcomes_.push_back(std::move(out));
}

ReplugOutcome DeviceReplug::replug(const ReplugJob& job) {
  ReplugOutcome out;
  out.vm = job.vm;
  std::string why;
  if (!conn_) {
    conn_ = virt::Connection::open(uri_, &why);
    if (!conn_) {
      out.what = why;
      return out;
    }
  }
  virt::Domain d;
  if (!ok(conn_->find(job.uuid, &d, &why))) {
    out.what = why;
    return out;
  }
  const virt::DomainInfo info = d.info();
  if (!runs(info.state)) {
    out.what = "domain " + info.name + " is " + std::string(virt::state_name(info.state)) +
               (virt::has_process(info.state)
                    ? ": its vgpu device is plugged in again if it resumes"
                    : " now: it connects to this vgpud at its next start");
    return out;
  }
  std::string live;
  virt::DomainXml parsed;
  if (!ok(d.live_xml(&live, &why)) || !virt::parse_domain_xml(live, &parsed, &why)) {
    out.what = why;
    return out;
  }
  const std::string name = std::string(virt::kDevicePrefix) + job.vm;
  auto dev = std::find_if(parsed.devices.begin(), parsed.devices.end(),
                          [&](const virt::VgpuDevice& v) { return v.name == name; });
  if (job.still_lost && !job.still_lost()) {
    out.what = "domain " + info.name + "'s QEMU is connected to this vgpud: nothing to do";
    return out;
  }
  // Missing: unplugged by a vgpud that stopped before it plugged the new one
  // in, or attached while the domain ran and not plugged in then.
  const bool missing = dev == parsed.devices.end();
  std::string how = "the vgpu device, missing, was plugged in";
  if (!missing) {
    spdlog::info("vm {}: domain {} runs with the vgpu device of a previous vgpud: unplugging it "
                 "to plug it in again",
                 job.vm, info.name);
    const auto asked = std::chrono::steady_clock::now();
    if (!ok(conn_->unplug(d, dev->xml, &why)) || !wait_removed(d, name, &why)) {
      out.what = why;
      return out;
    }
    const auto removed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - asked)
                                .count();
    how = "the vgpu device was plugged in again (the guest let go of the old one in " +
          std::to_string(removed_ms) + " ms)";
  }
  if (job.before_plug) job.before_plug();
  if (!ok(conn_->plug(d, virt::device_xml(job.vm, job.socket), &why))) {
    out.what = missing ? "domain " + info.name + " runs without its vgpu device, and " + why +
                             ": it gets it at its next start"
                       : why + " (it was unplugged: vgpud tries again when it starts or "
                               "reconnects to libvirt, or restart the domain)";
    return out;
  }
  out.replugged = true;
  out.what = "domain " + info.name + ": " + how + "; its module takes it up";
  return out;
}

bool DeviceReplug::wait_removed(const virt::Domain& d, const std::string& name, std::string* why) {
  const auto limit = std::chrono::steady_clock::now() + kRemovalLimit;
  for (;;) {
    std::string live;
    virt::DomainXml parsed;
    if (!ok(d.live_xml(&live, why)) || !virt::parse_domain_xml(live, &parsed, why)) return false;
    if (std::none_of(parsed.devices.begin(), parsed.devices.end(),
                     [&](const virt::VgpuDevice& v) { return v.name == name; }))
      return true;
    if (!runs(d.info().state)) {  // a stopped domain's XML is its definition: the device stays
      *why = "the domain stopped while its guest let go of the device";
      return false;
    }
    if (std::chrono::steady_clock::now() > limit) {
      *why = "the guest did not let go of the vgpu device within " +
             std::to_string(kRemovalLimit.count()) +
             " s (its kernel has no PCI hot-plug, or it hangs): restart the domain";
      return false;
    }
    if (stopping()) {
      *why = "vgpud stopped while the guest let go of the device";
      return false;
    }
    std::this_thread::sleep_for(kRemovalPoll);
  }
}

}  // namespace vgpu::host
