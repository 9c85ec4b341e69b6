// vgpud's composition: the transport loop feeds each VM's requests to the
// session layer (host/sessions.h), queued work goes to the dispatcher,
// completions go back as replies, and the usage the dispatcher measures is
// flushed to the store (host/usage_flusher.h).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics_server.h"
#include "scheduler_control.h"
#include "vgpu/executor/backend.h"
#include "vgpu/host/gpu_set.h"
#include "vgpu/host/libvirt_control.h"
#include "vgpu/host/quota_control.h"
#include "vgpu/host/sessions.h"
#include "vgpu/host/usage_flusher.h"
#include "vgpu/policy/store.h"
#include "vgpu/policy/usage_spool.h"
#include "vgpu/scheduler/dispatcher.h"
#include "vgpu/scheduler/dispatcher_group.h"
#include "vgpu/transport/host_loop.h"

namespace vgpu::daemon {

struct DaemonConfig {
  std::string runtime_dir;
  std::string db_path;
  // Policy, slice, overlap depth, VM weights (scheduler_control.h); null: defaults.
  std::shared_ptr<SchedulerControl> scheduling;
  transport::RegionGeometry geometry;
  std::vector<transport::VmSpec> vms;  // real VMs served from the start (vm_sockets.h)
  std::string libvirt_uri;  // whose domains to watch (docs/libvirt.md); "" or "none": none
  int vm_gid = -1;          // group of the VM sockets (QEMU's); -1: the daemon's
  std::string metrics_listen;  // HOST:PORT for Prometheus (metrics_server.h); "": none
  std::chrono::milliseconds flush_interval{1000};
  // Threads answering slow calls (CallHandler::slow), one per VM at a time.
  int call_threads = 2;
  // Which GPU a VM goes to, with several (host/placement.h).
  host::PlacementPolicy placement = host::PlacementPolicy::kSpread;
  // This host's name in the store: its usage rows and its `vgpuctl hosts` line.
  std::string host_name;
};

// Three connections to one database, so that the transport thread (every
// VM's calls, and the heartbeat guest modules watch) never waits for a
// writer: in WAL mode a read never waits, a write waits for any other
// writer, a sqlite3 shell's transaction included.
struct DaemonStores {
  // The transport thread's (VMs opening channels) and the quota accounting's:
  // reads, but for a VM's first connection ever.
  std::unique_ptr<policy::Store> serving;
  // The admin socket's requests (quota_control.h): a usage report may read
  // for seconds.
  std::unique_ptr<policy::Store> admin;
  // The writes that may wait: the usage ledger and when VMs were last seen
  // (the flusher), libvirt domain sessions.
  std::unique_ptr<policy::Store> ledger;
  // Where usage waits while the database cannot take it (usage_spool.h).
  std::unique_ptr<policy::UsageSpool> spool;
  // A database several hosts share (PostgreSQL) only: the budget leases'
  // transactions (policy/lease.h), which neither wait for nor hold up a
  // usage batch. None: budgets are charged in memory against the ledger.
  std::unique_ptr<policy::Store> leases;
};

// The composition root of the host: the stores, the GPUs and a dispatcher
// for each (host/gpu_set.h, scheduler/dispatcher_group.h), the session
// layer (host/sessions.h) over the transport loop, the quota control and its
// admin socket, libvirt, the metrics endpoint and the usage flusher, started
// and stopped in order.
class Daemon final {
 public:
  // `gpus`: the host's GPUs, at least one, of one backend kind.
  Daemon(DaemonConfig config, std::vector<std::unique_ptr<executor::Backend>> gpus,
         DaemonStores stores);
  ~Daemon();

  // Starts every part in order; on a failure, stops what it started and
  // returns the part's Result (a socket that cannot be had: unavailable).
  Result start();
  void stop();  // closes every channel, flushes usage

  std::string socket_path() const;

  // Any thread, after start(): true once the transport loop has woken and
  // answered within `within` (the service watchdog's probe: a loop stuck in
  // a call answers nothing, so systemd gets no ping).
  bool responsive(std::chrono::milliseconds within) { return sessions_->responsive(within); }

 private:
  nlohmann::json status() const;
  nlohmann::json metrics_usage() const;
  uint64_t total_memory() const;  // of every GPU

  const DaemonConfig config_;
  // The one GPU, or the GpuSet of several (gpu_set_ then).
  std::unique_ptr<executor::Backend> backend_;
  host::GpuSet* gpu_set_ = nullptr;
  const std::unique_ptr<policy::Store> store_;        // DaemonStores::serving
  const std::unique_ptr<policy::Store> admin_store_;
  const std::unique_ptr<policy::Store> ledger_store_;
  const std::unique_ptr<policy::UsageSpool> spool_;
  const std::unique_ptr<policy::Store> lease_store_;
  scheduler::SteadyClock clock_;
  std::unique_ptr<host::QuotaControl> quotas_;  // the quota gate, admin socket, live changes
  const std::shared_ptr<SchedulerControl> scheduling_;
  std::vector<std::unique_ptr<scheduler::Dispatcher>> dispatchers_;  // one per GPU
  std::unique_ptr<scheduler::DispatcherGroup> dispatcher_;
  std::unique_ptr<host::UsageFlusher> usage_;
  std::unique_ptr<host::Sessions> sessions_;
  std::unique_ptr<transport::HostLoop> loop_;
  std::unique_ptr<host::LibvirtControl> libvirt_;  // attached domains: sockets, lifecycle, sessions
  std::unique_ptr<MetricsServer> metrics_;   // --metrics-listen
  std::chrono::steady_clock::time_point started_;
};

}  // namespace vgpu::daemon
