// Applies vgpud's scheduling settings (scheduler_config.h): the policy the
// dispatcher starts with, the weights and courses pinned on VMs as they
// connect (handed to the quota control, which owns a tenant's parameters),
// and live changes when the config file is re-read (SIGHUP).
//
// A reload that fails (unreadable file, bad JSON, a value out of range)
// changes nothing: the old settings stay, and the reason is returned and
// logged.
//
// Threads: load/reload from main; vm_opened from the transport thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "scheduler_config.h"
#include "vgpu/scheduler/dispatcher_group.h"

namespace vgpu::daemon {

class SchedulerControl {
 public:
  explicit SchedulerControl(SchedulerFlags flags = {}) : flags_(std::move(flags)) {}

  // Reads the settings once, at start. An error means vgpud must not start.
  Result load();
  SchedulerSettings settings() const;

  // What to build the dispatcher with.
  std::unique_ptr<scheduler::SchedulingPolicy> make_policy() const;
  scheduler::DispatcherConfig dispatcher_config() const;
  // Where the pins go: the quota control, the one writer of a tenant's
  // scheduling parameters (host/quota_control.h), merges them with the
  // store's.
  using PinSink = std::function<void(scheduler::TenantId, const scheduler::ParamsOverride&)>;
  void attach(scheduler::DispatcherGroup* dispatcher, PinSink pins);

  // A VM connected as `tenant`: pins its weight and course if the settings
  // name it.
  void vm_opened(scheduler::TenantId tenant, const std::string& vm);

  // Re-reads the file and applies what changed, live. On error nothing changes.
  Result reload();

 private:
  const SchedulerFlags flags_;
  mutable std::mutex mu_;  // guards all below
  SchedulerSettings current_;
  scheduler::DispatcherGroup* dispatcher_ = nullptr;
  PinSink pins_;
  std::map<std::string, scheduler::TenantId> vms_;  // every VM seen, by name
};

}  // namespace vgpu::daemon
