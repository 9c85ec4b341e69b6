// A running domain whose vgpu device was wired to a previous vgpud (killed,
// crashed, restarted for an upgrade) has lost its GPU for good: its QEMU's
// ivshmem connection died with that vgpud, and ivshmem never connects again.
// vgpud takes the device out of the domain (PCI hot-unplug: the guest's module
// lets go of it) and plugs it in again (QEMU connects to this vgpud and the
// module attaches as at boot), so the VM's programs run again without a
// reboot (docs/libvirt.md). A running domain found without its device (a
// vgpud stopped between the two) gets one plugged in.
//
// One worker thread (serial_worker.h) and one libvirt connection of its own:
// a guest takes seconds to let go of a device, which must hold up neither
// domain events nor the VMs' calls.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vgpu/host/serial_worker.h"
#include "virt_connection.h"

namespace vgpu::host {

struct ReplugJob {
  std::string uuid;    // the domain
  std::string vm;      // vgpu's VM attached to it
  std::string socket;  // where this vgpud serves the VM
  // Checked again just before the unplug: false once the domain's QEMU is
  // connected to this vgpud (the domain restarted meanwhile).
  std::function<bool()> still_lost;
  // Called between the unplug and the plug (the server's layout for a
  // replugged device: ivshmem_server.h).
  std::function<void()> before_plug;
};

struct ReplugOutcome {
  std::string vm;
  bool replugged = false;
  std::string what;  // what happened, for the log and the tests
};

class DeviceReplug {
 public:
  explicit DeviceReplug(std::string uri) : uri_(std::move(uri)) {}
  ~DeviceReplug();  // stop(), then the worker ends
  DeviceReplug(const DeviceReplug&) = delete;
  DeviceReplug& operator=(const DeviceReplug&) = delete;

  // Any thread. A VM queued or being replugged is not queued again.
  void request(ReplugJob job);
  // Jobs not begun end at once; a replug under way stops at its next look.
  // Returns once the worker has ended: no job calls back after it.
  void stop();
  // Returns once every job requested before the call has ended (tests: "no
  // other job came" is then a fact, not a wait).
  void drain() { worker_.drain(); }
  std::vector<ReplugOutcome> outcomes() const;  // every job's, in order

 private:
  void run(const ReplugJob& job);  // worker
  ReplugOutcome replug(const ReplugJob& job);
  // Polls the live XML until the device named `name` is gone: unavailable at
  // the limit, conflict when the domain or vgpud stops meanwhile.
  Result wait_removed(const virt::Domain& d, const std::string& name);
  bool stopping() const;

  const std::string uri_;
  std::unique_ptr<virt::Connection> conn_;  // the worker's

  mutable std::mutex mu_;
  std::vector<std::string> busy_;  // VMs queued or in hand
  std::vector<ReplugOutcome> outcomes_;
  bool stop_ = false;
  SerialWorker worker_;  // last: its thread uses what is above
};

}  // namespace vgpu::host
