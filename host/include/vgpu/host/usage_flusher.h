// The usage ledger's writer: what the dispatcher measured since the last
// flush, per tenant, goes to the store as one record per tenant in the
// current hour's bucket, charged to the student each VM is bound to; and the
// VMs that opened a channel meanwhile get their last-seen time. Runs every
// interval on a thread of its own (the ledger's SQLite connection: a write
// may wait for another program's lock, and no VM waits with it), on an
// admin's `usage.flush`, and once more at stop.
//
// With a host identity (set_host), each record says which host and GPU
// measured it, and each flush also reports the host itself to the store
// (`vgpuctl hosts`): several hosts may share one store. With a spool
// (set_spool) as well, a batch the store cannot take is kept there and
// replayed, oldest first and each once, when it can (usage_spool.h).
#pragma once

#include <chrono>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "vgpu/executor/backend.h"
#include "vgpu/host/quota_control.h"
#include "vgpu/policy/store.h"
#include "vgpu/policy/usage_spool.h"
#include "vgpu/scheduler/dispatcher_group.h"
#include "vgpu/thread_annotations.h"

namespace vgpu::host {

class UsageFlusher {
 public:
  // Unix seconds now (tests pass a clock that crosses an hour).
  using WallClock = std::function<int64_t()>;

  // Who writes: this host's name, which GPU a tenant is on, and what the
  // host reports of itself at each flush.
  struct HostIdentity {
    std::string name;
    std::string backend;
    std::function<uint32_t(scheduler::TenantId)> gpu_of;  // unset: GPU 0
    std::function<std::string()> gpus;                    // the status's "gpus", as JSON
    // The report is written at start(); then, with a heartbeat, when it
    // changes and at least this often (a liveness beat for the other hosts
    // sharing the store). 0: at start only (a SQLite file, which no other
    // host reads, is not written by the host's comings and goings).
    int64_t heartbeat_s = 0;
  };

  UsageFlusher(policy::Store* ledger, const scheduler::DispatcherGroup* dispatcher,
               const executor::Backend* backend, QuotaControl* quotas,
               std::chrono::milliseconds interval, WallClock now = default_now);
  ~UsageFlusher();  // stop()

  // Before start(): records carry the host and GPU, and the host reports itself.
  void set_host(HostIdentity host) { host_ = std::move(host); }
  // Before start(), after set_host(): where batches wait while the store
  // cannot take them. Not owned.
  void set_spool(policy::UsageSpool* spool) { spool_ = spool; }
  void start();               // reports the host; the thread that flushes every interval
  void stop() EXCLUDES(mu_);  // ends it, then flushes what is left

  // Any thread: writes what was measured since the last flush; returns once
  // it is in the store. One flush at a time. An error when some usage is
  // not in the store yet (it waits in the spool, or, without one, was lost).
  Result flush() EXCLUDES(flushing_, mu_);
  // Any thread: `vm` opened a channel; its last-seen time is written at the
  // next flush.
  void seen(const std::string& vm) EXCLUDES(mu_);

  // The hour bucket a record written at `unix_seconds` goes to.
  static int64_t hour_of(int64_t unix_seconds) { return unix_seconds / 3600 * 3600; }
  static int64_t default_now() { return static_cast<int64_t>(std::time(nullptr)); }

 private:
  void run() EXCLUDES(mu_);
  void report_host(bool at_start) REQUIRES(flushing_);
  // Writes the batch under its number, or keeps it in the spool behind those
  // waiting there; then replays the spool while the store takes batches.
  // An error while batches still wait in the spool.
  Result write_spooled(std::vector<policy::UsageRecord> batch) REQUIRES(flushing_);
  // A batch the store refused for its data: out of the queue, kept, logged.
  void set_aside(int64_t seq, const Result& refused) REQUIRES(flushing_);

  policy::Store* const ledger_;
  const scheduler::DispatcherGroup* const dispatcher_;
  const executor::Backend* const backend_;
  QuotaControl* const quotas_;
  const std::chrono::milliseconds interval_;
  const WallClock now_;
  HostIdentity host_;
  policy::UsageSpool* spool_ = nullptr;
  int64_t spooled_ GUARDED_BY(flushing_) = 0;   // batches waiting in the spool
  int64_t last_seq_ GUARDED_BY(flushing_) = 0;  // the last batch number given
  std::string reported_ GUARDED_BY(flushing_);  // the last report written
  int64_t reported_at_ GUARDED_BY(flushing_) = 0;
  bool report_failing_ GUARDED_BY(flushing_) = false;
  const int64_t started_at_ = now_();

  Mutex flushing_;  // one flush at a time
  // Usage already written to the store, per tenant.
  std::unordered_map<scheduler::TenantId, scheduler::TenantUsage> flushed_ GUARDED_BY(flushing_);
  Mutex mu_;
  std::unordered_set<std::string> seen_vms_ GUARDED_BY(mu_);  // since the last flush
  bool stopping_ GUARDED_BY(mu_) = false;
  CondVar cv_;
  std::thread thread_;
};

}  // namespace vgpu::host
