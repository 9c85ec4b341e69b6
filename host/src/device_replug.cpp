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
  if (!conn_) {
    if (Result r = virt::Connection::open(uri_, &conn_); !r.ok()) {
      out.what = r.text();
      return out;
    }
  }
  virt::Domain d;
  if (Result r = conn_->find(job.uuid, &d); !r.ok()) {
    out.what = r.text();
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
  virt::DomainXml parsed;
  if (Result r = d.devices_now(&parsed); !r.ok()) {
    out.what = r.text();
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
    Result unplugged = conn_->unplug(d, dev->xml);
    if (unplugged.ok()) unplugged = wait_removed(d, name);
    if (!unplugged.ok()) {
      out.what = unplugged.text();
      return out;
    }
    const auto removed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - asked)
                                .count();
    how = "the vgpu device was plugged in again (the guest let go of the old one in " +
          std::to_string(removed_ms) + " ms)";
  }
  if (job.before_plug) job.before_plug();
  if (Result r = conn_->plug(d, virt::device_xml(job.vm, job.socket)); !r.ok()) {
    const std::string why = r.text();
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

Result DeviceReplug::wait_removed(const virt::Domain& d, const std::string& name) {
  const auto limit = std::chrono::steady_clock::now() + kRemovalLimit;
  for (;;) {
    virt::DomainXml parsed;
    if (Result r = d.devices_now(&parsed); !r.ok()) return r;
    if (std::none_of(parsed.devices.begin(), parsed.devices.end(),
                     [&](const virt::VgpuDevice& v) { return v.name == name; }))
      return {};
    if (!runs(d.info().state))  // a stopped domain's XML is its definition: the device stays
      return Result::conflict("the domain stopped while its guest let go of the device");
    if (std::chrono::steady_clock::now() > limit) {
      return Result::unavailable("the guest did not let go of the vgpu device within " +
                                 std::to_string(kRemovalLimit.count()) +
                                 " s (its kernel has no PCI hot-plug, or it hangs): restart the "
                                 "domain");
    }
    if (stopping()) return Result::conflict("vgpud stopped while the guest let go of the device");
    std::this_thread::sleep_for(kRemovalPoll);
  }
}

}  // namespace vgpu::host
