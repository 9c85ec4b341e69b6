// vgpud and libvirt (docs/libvirt.md). The VMs attached to libvirt domains
// (`vgpuctl vm attach`; the policy store holds the attachments) are served
// from vgpud's start and from the moment they are attached, so their ivshmem
// sockets exist whenever a domain starts: QEMU connects before libvirt even
// says the domain started. Domain events, matched by UUID, open and close
// the session ledger and release what a stopped domain's VM still held.
//
//   started              a session begins (the socket was there already), or
//                        earlier, when its QEMU connects; a running domain
//                        the device is plugged into gets one when its QEMU
//                        connects
//   stopped, crashed,    the VM's channel is closed if its QEMU still holds
//   destroyed, failed    it (everything the tenant held is released, its
//                        queue dropped); the session ends with the reason;
//                        the socket stays for the next start
//   undefined            nothing: the attachment (and the socket) stay until
//                        `vgpuctl vm detach`, so a domain defined again with
//                        its UUID keeps its GPU; a new domain reusing the name
//                        is another UUID, and its QEMU is turned away
//   (re)connected        the domains as they are: sessions begun or ended
//                        for what happened while libvirt was unreachable;
//                        a running domain whose QEMU is not connected to
//                        this vgpud (it was to a previous one) gets its
//                        device plugged in again (device_replug.h)
//   resumed              the same, for a domain paused when vgpud started
//
// A QEMU that connects to an attached VM's socket but runs another domain
// (its `-uuid`) is turned away.
//
// Threads: start/stop on main; after_request on the admin thread; admit on
// the transport loop thread; DomainEvents on the watcher's thread. Sessions
// are written to the store (the daemon's ledger connection) on a worker of
// their own, in the order they were asked for, so that neither the transport
// thread nor mu_ ever waits for another program's write lock. mu_ guards the
// maps.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "domain_watcher.h"
#include "vgpu/host/device_replug.h"
#include "vgpu/host/serial_worker.h"
#include "vgpu/policy/store.h"
#include "vgpu/result.h"

namespace vgpu::host {

// What the control asks of the daemon.
struct VmHooks {
  // Serves VM `vm`'s ivshmem-doorbell socket (nothing to do if it is served).
  std::function<Result(const std::string& vm)> serve;
  std::function<void(const std::string& vm)> unserve;
  // Closes VM `vm`'s channel if QEMU process `pid` (any, if -1) holds it.
  std::function<void(const std::string& vm, int pid)> release;
  // VM `vm`'s next QEMU connection plugs a device in place of an unplugged one.
  std::function<void(const std::string& vm)> expect_replug;
  // The socket path of VM `vm`.
  std::function<std::string(const std::string& vm)> socket_path;
  // GPU time tenant `tenant` has used since vgpud started.
  std::function<uint64_t(policy::TenantId tenant)> gpu_ns;
};

class LibvirtControl final : public virt::DomainEvents {
 public:
  // `uri` empty or "none": attachments are served, but no domain is watched
  // (and no session recorded).
  LibvirtControl(policy::Store* store, VmHooks hooks, std::string uri,
                 virt::WatcherOptions watcher = {});
  ~LibvirtControl() override;

  // Ends sessions a previous vgpud left open, serves every attached VM,
  // starts watching. An attached VM that cannot be served is logged and the
  // others are served: its domain cannot start until that is fixed.
  void start();
  void stop();  // open sessions end with "vgpud stopped"

  // Admin thread, after each request: vm.attach adds the socket path to its
  // result (dry runs too) and serves the VM; vm.detach stops serving it.
  void after_request(const nlohmann::json& request, nlohmann::json* answer);
  // Transport loop thread (host::Sessions::on_open): false, with `why`, for a QEMU of
  // another domain than the one attached as `vm`.
  bool admit(const std::string& vm, int pid, std::string* why);

  bool watching() const { return watcher_ != nullptr; }
  bool connected() const { return watcher_ && watcher_->connected(); }
  virt::DomainWatcher* watcher() { return watcher_.get(); }  // fault injection (tests)
  // Returns once the session writes asked for so far are done (tests).
  void drain_sessions() {
    if (sessions_worker_) sessions_worker_->drain();
  }
  DeviceReplug* replug() { return replug_.get(); }            // what was replugged (tests)

 private:
  struct Session {
    int64_t id = 0;
    policy::TenantId tenant = 0;
    std::string vm;
    uint64_t gpu_at_start = 0;
  };

  // virt::DomainEvents (watcher thread)
  void connected(const std::vector<virt::DomainInfo>& domains) override;
  void unreachable(const std::string& why, int failures,
                   std::chrono::milliseconds retry_in) override;
  void lost(const std::string& why) override;
  void event(const virt::DomainEvent& e) override;

  void reload();  // attachments from the store
  // Session worker: a session for the domain unless one is open; `how` the
  // domain came to need it, for the log.
  void begin_session(const std::string& uuid, const std::string& name, const char* how);
  // Session worker: releases the VM (if its domain has no QEMU now) and ends
  // its session.
  void end_session(const std::string& uuid, const std::string& name, const std::string& reason,
                   virt::DomainState now);
  // Any thread: begin_session / end_session, queued for the session worker.
  void post_begin(const std::string& uuid, const std::string& name, const char* how);
  void post_end(const std::string& uuid, const std::string& name, const std::string& reason,
                virt::DomainState now);
  // Whether the QEMU running domain `uuid` is connected to this vgpud as `vm`.
  bool qemu_connected(const std::string& vm, const std::string& uuid);
  // Asks for the domain's device to be replugged unless its QEMU is connected.
  void replug_if_lost(const std::string& uuid, const std::string& vm);

  policy::Store* const store_;
  const VmHooks hooks_;
  const std::string uri_;
  std::unique_ptr<virt::DomainWatcher> watcher_;

  std::mutex mu_;
  std::unordered_map<std::string, policy::DomainAttachment> by_uuid_;
  std::unordered_map<std::string, Session> sessions_;  // by domain UUID; the worker adds
  std::unordered_map<std::string, int> qemu_pid_;      // by VM: the last QEMU that connected

  // Last: their threads use what is above, so they go first.
  std::unique_ptr<SerialWorker> sessions_worker_;  // with the watcher
  std::unique_ptr<DeviceReplug> replug_;
};

}  // namespace vgpu::host
