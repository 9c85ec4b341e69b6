// The dispatcher: per-tenant command queues and the one thread that issues
// work to the backend. Each turn it asks the policy which tenant runs next,
// asks the quota gate for that tenant's budget, runs the tenant's queue in
// order for one slice, and reports each command's measured time back to both.
//
// Threads: submit()/accepting() come from the transport thread; tenant
// changes and purges from any thread; everything that touches the policy, the
// gate or the backend's execute() happens on the dispatcher thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <tbb/concurrent_queue.h>

#include "vgpu/executor/backend.h"
#include "vgpu/scheduler/command.h"
#include "vgpu/scheduler/policy.h"
#include "vgpu/scheduler/quota_gate.h"

namespace vgpu::scheduler {

struct DispatcherConfig {
  size_t max_queued_per_tenant = 4096;  // back-pressure beyond this
};

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

  Dispatcher(executor::Backend* backend, std::unique_ptr<Policy> policy, QuotaGate* gate,
             const Clock* clock, DispatcherConfig config, Completion on_complete,
             RoomCallback on_room);
  ~Dispatcher();

  void start();
  void stop();  // drops what is still queued (discarded, no completions)

  void add_tenant(TenantId tenant, const TenantParams& params);
  void update_tenant(TenantId tenant, const TenantParams& params);
  void remove_tenant(TenantId tenant);

  // Queues a command; the backend must already have accepted its work.
  void submit(Command&& command);
  bool accepting(TenantId tenant) const;

  // Blocks until no command of `context` can run any more: queued ones are
  // discarded (without completions), an executing one has finished.
  void purge_context(TenantId tenant, executor::ContextId context);

  // The gate may have changed its mind (a quota was raised): re-ask it.
  void poke();

  TenantUsage usage(TenantId tenant) const;
  std::unordered_map<TenantId, TenantUsage> usage_all() const;

 private:
  struct Tenant;
  void run();
  void apply_control();
  void note_runnable();
  bool run_one_slice();
  void fail_queue(Tenant& t, Status error);
  std::shared_ptr<Tenant> find(TenantId id) const;
  void account(Tenant& t, const executor::Work& w, const executor::ExecResult& r);

  executor::Backend* const backend_;
  const std::unique_ptr<Policy> policy_;
  QuotaGate* const gate_;
  const Clock* const clock_;
  const DispatcherConfig config_;
  const Completion on_complete_;
  const RoomCallback on_room_;

  mutable std::mutex mu_;  // guards tenants_, control_, and the wake-up condition
  std::condition_variable cv_;
  std::unordered_map<TenantId, std::shared_ptr<Tenant>> tenants_;
  std::vector<std::function<void()>> control_;  // run on the dispatcher thread
  bool wake_ = false;

  tbb::concurrent_queue<TenantId> became_runnable_;
  std::unordered_set<TenantId> waiting_;  // dispatcher thread: tenants the gate holds back
  std::atomic<bool> running_{false};
  std::thread thread_;
};

}  // namespace vgpu::scheduler
