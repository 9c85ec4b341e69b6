// The dispatcher: per-tenant command queues and the one thread that issues
// work to the backend. Each turn it asks the policy which tenant runs next,
// asks the quota gate for that tenant's budget, runs the tenant's queue in
// order for one slice, and reports each command's measured time back to both
// (turn.h: the same protocol the simulation harness drives).
//
// Threads: submit()/accepting() come from the transport thread (one thread:
// they share a view of the tenants without a lock); tenant
// changes, policy changes and purges from any thread; everything that touches
// the policy, the gate or the backend's execute() happens on the dispatcher
// thread (changes travel there through its control queue).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "vgpu/executor/backend.h"
#include "vgpu/protocol/polling.h"
#include "vgpu/result.h"
#include "vgpu/scheduler/command.h"
#include "vgpu/scheduler/policy.h"
#include "vgpu/scheduler/quota_gate.h"
#include "vgpu/scheduler/turn.h"
#include "vgpu/thread_annotations.h"

namespace vgpu::scheduler {

struct DispatcherConfig {
  size_t max_queued_per_tenant = 4096;  // back-pressure beyond this
  // How many of one tenant's batched commands (launches, and what else the
  // backend batches) may be in flight on the device at once
  // (1..kMaxOverlapDepth) (Backend::issue_batch). Above 1, a batch may also
  // end with its last ones still running: the next batch, of
  // the same context or the next tenant's, is issued behind them, and they
  // are charged to their tenant when they finish. The dispatcher issues a
  // tenant's commands in order and never lets two tenants issue in the same
  // slice. A backend that runs one launch at a time (the sim backend) runs
  // at depth 1 whatever this says: see effective_overlap_depth().
  uint32_t overlap_depth = 1;
  // Consecutive commands of one context that the backend batches
  // (Backend::batches: launches at least) are handed to it as one batch of
  // at most this many (Backend::execute_batch); 1: never batch.
  size_t max_batch = 256;
  // When a tenant's queue ran empty within the last `woke_recently_ns` (it
  // may come back at any moment: a program that synchronizes after a few
  // kernels), a batch ends once it has used `batch_step_ns` of device time,
  // so that its next submission is seen within that (and the turn ends there
  // if the policy says so) rather than a whole slice later. Tenants that
  // always have work queued keep whole batches.
  Nanos batch_step_ns = 250'000;
  Nanos woke_recently_ns = 100'000'000;
  // With nothing to run, the dispatcher polls for new work this long before it
  // sleeps (yielding the CPU between looks): a program's next call usually
  // follows at once, and waking a sleeping thread costs more than the call.
  std::chrono::microseconds poll_before_sleep = proto::kPollBeforeSleep;
};

inline constexpr uint32_t kMaxOverlapDepth = 16;

struct TenantUsage {
  uint64_t gpu_ns = 0;
  uint64_t commands = 0;
  uint64_t kernels = 0;
  uint64_t bytes_to_device = 0;
  uint64_t bytes_from_device = 0;
  size_t queued = 0;
};

class Dispatcher {
 public:
  // Called on the dispatcher thread after a command ran (or was failed by the gate).
  using Completion = std::function<void(const Command&, const executor::ExecResult&)>;
  // Called when a tenant's queue has room again after accepting() said no.
  using RoomCallback = std::function<void()>;

  // `clock` is read on the dispatcher thread and by submit() (when a queue
  // goes from empty to not), so its now() must be safe from any thread.
  Dispatcher(executor::Backend* backend, std::unique_ptr<SchedulingPolicy> policy, QuotaGate* gate,
             const Clock* clock, DispatcherConfig config, Completion on_complete,
             RoomCallback on_room);
  ~Dispatcher();

  void start();
  // Drops what is still queued (discarded, no completions); runs waiting Retired.
  void stop() EXCLUDES(mu_);

  // Switches the policy or changes its options, live, from the next turn.
  // Same name: the policy keeps what it learned (lags, virtual times). Another
  // name: the new policy is told every tenant, its parameters and whether it
  // is runnable, and starts everyone level. Invalid argument for an unknown
  // name or a slice out of range; nothing changes then.
  Result configure_policy(std::string_view name, const PolicyOptions& options) EXCLUDES(mu_);
  std::string policy_name() const EXCLUDES(mu_);

  // Launches of one tenant in flight at once: the setting (changed live, from
  // the next batch), and what the backend makes of it (no more than it can
  // keep in flight).
  void set_overlap_depth(uint32_t depth);
  uint32_t overlap_depth() const { return overlap_depth_.load(); }
  uint32_t effective_overlap_depth() const {
    return std::min(overlap_depth_.load(), std::max<uint32_t>(backend_->max_batch_depth(), 1));
  }

  // Runs once what purge_context or remove_tenant ended can run no more.
  using Retired = std::function<void()>;

  void add_tenant(TenantId tenant, const TenantParams& params) EXCLUDES(mu_);
  void update_tenant(TenantId tenant, const TenantParams& params) EXCLUDES(mu_);
  // The tenant is gone when this returns: its queued commands are discarded
  // without completions, submit() answers for it, and a command of it running
  // now completes without one. `retired` (if set) runs once that command has
  // finished, as for purge_context. Never waits.
  void remove_tenant(TenantId tenant, Retired retired = {}) EXCLUDES(mu_);
  // What the policy was told for the tenant (add_tenant, then update_tenant).
  std::optional<TenantParams> tenant_params(TenantId tenant) const EXCLUDES(mu_);

  // Queues a command; the backend must already have accepted its work.
  void submit(Command&& command) EXCLUDES(mu_);
  // Queues several commands of one tenant, in order (moved from `commands`),
  // with one hand-over to the dispatcher thread.
  void submit(TenantId tenant, std::span<Command> commands) EXCLUDES(mu_);
  bool accepting(TenantId tenant) const EXCLUDES(mu_);

  // No command of `context` runs from now on: queued ones are discarded, and
  // one executing now completes, all without completions. `retired` runs
  // once that command has finished (only then may what it uses go): at once
  // on this thread when none of the context is executing, else on the
  // dispatcher thread as it ends. Never waits: the caller is the transport
  // thread, and a long kernel of the context would hold up every VM.
  void purge_context(TenantId tenant, executor::ContextId context, Retired retired)
      EXCLUDES(mu_);

  // The gate may have changed its mind (a quota was raised): re-ask it.
  void poke() EXCLUDES(mu_);

  // Usage is kept after a tenant is removed, so none is lost before it is
  // flushed and the counters never go back if the tenant comes again.
  TenantUsage usage(TenantId tenant) const EXCLUDES(mu_);
  std::unordered_map<TenantId, TenantUsage> usage_all() const EXCLUDES(mu_);

 private:
  struct Tenant;
  struct Usage;
  struct Tally;
  class Queues;  // the TurnSource a turn runs against
  void run();
  void apply_control();
  void note_runnable(TurnSource::ArrivalListener* arrivals = nullptr);
  bool run_one_slice();
  // True if work or a control op arrived within config_.poll_before_sleep.
  bool poll_for_work() const;
  void fail_queue(Tenant& t, Status error);
  std::shared_ptr<Tenant> find(TenantId id) const EXCLUDES(mu_);
  // submit() and accepting() come from one thread, per burst: they look the
  // tenant up in that thread's own copy of tenants_ (refreshed when
  // tenants_gen_ moves), not under mu_, which the dispatcher thread takes
  // every turn. Null for a tenant not added.
  Tenant* submitter_find(TenantId id) const EXCLUDES(mu_);
  void account(Usage& u, const executor::Work& w, const executor::ExecResult& r);
  // Dispatcher thread, around each command it takes: what runs (for
  // purge_context and remove_tenant), and whether it may. end_running()
  // calls the Retired callbacks that waited for the command.
  void begin_running(TenantId tenant, executor::ContextId context);
  void end_running();
  static bool is_dead(Tenant& t, executor::ContextId context);
  static void forget_dead(Tenant& t);  // the tenant's queue is empty
  // After marking something dead: `retired` now if `running()` is false,
  // else from end_running().
  template <class Running>
  void retire(Running running, Retired retired) EXCLUDES(retired_mu_);
  void run_retired() EXCLUDES(retired_mu_);  // every callback waiting: nothing runs now
  // Sends the effective params to the policy.
  void tell_params(TenantId tenant) REQUIRES(mu_);
  bool run_next(Tenant& tenant, Nanos budget, Nanos* gpu_time, bool* more);
  // Dispatcher thread: the tenant's next command (put-back ones first).
  bool pop(Tenant& t, Command* out);
  // Runs batch_ (consecutive batched commands of one context) within `budget`; the
  // commands that did not run go back to the front of the tenant's queue.
  // Returns how many of them left the queue (ran, or are in flight now).
  size_t run_batch(Tenant& t, Nanos budget, Nanos* gpu_time);
  // Launches the last batch left on the device (flight_): waited for, then
  // answered and charged to their tenant, before anything else of any
  // context runs (except a batch of theirs, which takes them along, or one
  // of another context, which is issued first: run_batch).
  void finish_flight();
  // Answers and charges what flight_ held, now finished (flight_results_).
  void complete_flight(size_t finished);
  // Dispatcher thread, with nothing running: finishes the flight, then runs
  // the Retired callbacks waiting.
  void settle_flight();

  executor::Backend* const backend_;
  std::unique_ptr<SchedulingPolicy> policy_;  // dispatcher thread only
  QuotaGate* const gate_;
  const Clock* const clock_;
  const DispatcherConfig config_;
  const Completion on_complete_;
  const RoomCallback on_room_;

  mutable Mutex mu_;  // also guards Tenant::params (dispatcher_tenant.h)
  CondVar cv_;
  std::unordered_map<TenantId, std::shared_ptr<Tenant>> tenants_ GUARDED_BY(mu_);
  // Every tenant ever added.
  std::unordered_map<TenantId, std::shared_ptr<Usage>> usage_ GUARDED_BY(mu_);
  std::string policy_name_ GUARDED_BY(mu_);
  std::vector<std::function<void()>> control_ GUARDED_BY(mu_);  // run on the dispatcher thread
  std::atomic<bool> wake_{false};  // set under mu_; polled without it
  // Tenants with commands queued (a hint: whether a batch is followed by
  // more work, so that leaving launches in flight pays).
  std::atomic<int64_t> with_work_{0};

  // Tenants whose queue went from empty to not, with when (clock_): a turn
  // running meanwhile is charged in parts, split there (turn.h). Submitters
  // push without a lock (a oneTBB queue, kept out of this header).
  struct Arrival {
    TenantId tenant;
    Nanos at;
  };
  class Arrivals;
  std::unique_ptr<Arrivals> became_runnable_;
  std::unordered_set<TenantId> waiting_;  // dispatcher thread: tenants the gate holds back
  // Dispatcher thread: when a tenant's queue last ran empty (long ago at first).
  Nanos last_emptied_ = std::numeric_limits<Nanos>::min() / 2;
  // Dispatcher thread: tenants whose add_tenant the policy has been told. A
  // submit can beat the control op that adds its tenant (and the turn loop
  // notes new work between commands); the policy ignores work of tenants it
  // does not know, so such a tenant is made runnable when its add arrives.
  std::unordered_set<TenantId> known_;
  std::unique_ptr<Queues> queues_;
  // Dispatcher thread: the batch being run, reused to avoid allocations.
  std::vector<Command> batch_;
  std::vector<const executor::Work*> batch_work_;
  std::vector<executor::ExecResult> batch_results_;
  // Dispatcher thread: commands the last batch left on the device, of one
  // context of flight_tenant_ (empty: none).
  std::vector<Command> flight_;
  std::vector<const executor::Work*> flight_work_;
  std::vector<executor::ExecResult> flight_results_;
  std::shared_ptr<Tenant> flight_owner_;
  std::atomic<bool> running_{false};
  std::atomic<uint32_t> overlap_depth_;
  std::thread thread_;

  // What the dispatcher thread runs now (kNothingRunning between commands),
  // and the Retired callbacks waiting for it to end.
  static constexpr uint64_t kNothingRunning = ~uint64_t{0};
  std::atomic<uint64_t> running_tenant_{kNothingRunning};
  std::atomic<uint64_t> running_context_{kNothingRunning};
  // The same for flight_, which may still run after its command ended.
  std::atomic<uint64_t> flight_tenant_{kNothingRunning};
  std::atomic<uint64_t> flight_context_{kNothingRunning};
  Mutex retired_mu_;
  // By a number of their own.
  std::vector<std::pair<uint64_t, Retired>> retired_ GUARDED_BY(retired_mu_);
  uint64_t retired_seq_ GUARDED_BY(retired_mu_) = 0;
  std::atomic<size_t> retired_count_{0};  // retired_.size(), read without the lock

  // The submitting thread's view (submitter_find). Its own cache line: the
  // generation is read per burst and written only when tenants come or go.
  alignas(64) std::atomic<uint64_t> tenants_gen_{0};  // bumped under mu_
  mutable uint64_t submitter_gen_ = ~uint64_t{0};
  mutable std::unordered_map<TenantId, std::shared_ptr<Tenant>> submitter_tenants_;
};

}  // namespace vgpu::scheduler
