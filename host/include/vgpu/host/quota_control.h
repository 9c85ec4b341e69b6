// Quotas in the daemon: the scheduler's QuotaGate over policy::Accounting,
// the plans applied to connected VMs (memory caps, weights, the best-effort
// group), the admin socket's requests (applied live), and `vgpuctl top`.
//
// Threads: admit/disconnected on the transport thread; reserve/settle on the
// dispatcher thread; handle() on the admin thread; attribute() on the
// flusher. Accounting serialises its own state; the dispatcher and backend
// calls made here are the thread-safe ones (update_tenant, poke,
// set_memory_cap, usage_all).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "vgpu/executor/backend.h"
#include "vgpu/executor/call_handler.h"
#include "vgpu/host/admin_server.h"
#include "vgpu/host/lease_keeper.h"
#include "vgpu/policy/accounting.h"
#include "vgpu/scheduler/dispatcher_group.h"
#include "vgpu/scheduler/quota_gate.h"

namespace vgpu::host {

// Tenants past their budget with on-exhaust best-effort are scheduled in this
// group (weight 1 among groups, weight 1 within), behind every course.
inline constexpr uint32_t kBestEffortGroup = 0xFFFFFFFFu;
// What a tenant's work fails with when its budget is spent and it rejects:
// cudaErrorNotPermitted, which nothing else on the wire uses, so the guest
// library can say why.
inline constexpr Status kQuotaExhausted = Status::kNotPermitted;

class QuotaControl final : public scheduler::QuotaGate {
 public:
  // `store` serves the accounting (reads, on the transport and dispatcher
  // threads); `admin_store`, a connection of its own to the same database,
  // the admin socket's requests: a long report there holds up no VM.
  QuotaControl(policy::Store* store, policy::Store* admin_store, uint32_t daemon_uid);
  ~QuotaControl() override;

  // Budgets leased from a store several hosts share (policy/lease.h): a
  // LeaseKeeper on `lease_store` (a connection of its own) as host `host`.
  // Before start().
  void enable_leases(policy::Store* lease_store, const std::string& host,
                     const policy::LeaseRules& rules);

  // Starts the admin socket (and the lease keeper); the dispatcher and
  // backend outlive stop().
  Result start(scheduler::DispatcherGroup* dispatcher, executor::Backend* backend,
               const std::string& runtime_dir);
  void stop();

  // A VM (tenant) opens a channel: false with `why` if it is refused. Applies
  // its memory cap and gives the scheduling parameters to add it with.
  bool admit(scheduler::TenantId tenant, scheduler::TenantParams* params, std::string* why);
  void disconnected(scheduler::TenantId tenant);
  // The parameters the operator pins on a tenant (the config file's weight
  // and course for its VM), over those its plan gives; an empty pin lifts
  // it. The one writer of a tenant's scheduling parameters is this class:
  // the store's plan and the pins meet here. Any thread.
  void pin(scheduler::TenantId tenant, const scheduler::ParamsOverride& pin);
  // Charges each record of a usage batch to the student its VM is bound to.
  void attribute(std::vector<policy::UsageRecord>* batch);

  // scheduler::QuotaGate (dispatcher thread)
  scheduler::Grant reserve(scheduler::TenantId tenant, scheduler::Nanos want) override;
  void settle(scheduler::TenantId tenant, scheduler::Nanos reserved,
              scheduler::Nanos used) override;

  // The budget of the student `tenant`'s VM is bound to (the guest's
  // TenantBudget call): kInvalidValue for a tenant that is not connected.
  Status budget(scheduler::TenantId tenant, executor::TenantBudget* out);
  // `top` as an admin sees it: every connected VM (the metrics' view).
  nlohmann::json top_all() { return top(policy::Actor{}); }
  // One admin request line from a peer; the answer line.
  std::string handle(uint32_t uid, const std::string& line);
  // The answer to the admins-only `status` operation (daemon_status.h); set
  // before start().
  void set_status_source(std::function<nlohmann::json()> source) { status_ = std::move(source); }
  // Writes the usage measured so far to the store and returns once it is
  // there (`usage.flush`: reports read from the file, tests); set before start().
  // An error when some usage is not in the store yet (usage_flusher.h).
  void set_flush(std::function<Result()> flush) { flush_ = std::move(flush); }
  // Runs after each request the store answered (admin thread), and may add to
  // the answer (libvirt_control.h: vm.attach, vm.detach); set before start().
  using RequestHook = std::function<void(const nlohmann::json& request, nlohmann::json* answer)>;
  void set_request_hook(RequestHook hook) { request_hook_ = std::move(hook); }
  // Told each tenant's placement policy (its quota's; none: the host's)
  // when it is admitted and when its plan changes (gpu_set.h, with several
  // GPUs); set before start().
  using PlacementSink = std::function<void(scheduler::TenantId, std::optional<policy::Placement>)>;
  void set_placement_sink(PlacementSink sink) { placement_sink_ = std::move(sink); }
  // Whether a VM's memory cap can fit the host's GPUs at all (gpu_set.h):
  // a VM whose cap cannot is refused when it connects, with the reason, and
  // admitted once its cap is lowered. Set before start(); none: every cap.
  using CapCheck = std::function<Result(uint64_t memory_cap)>;
  void set_cap_check(CapCheck check) { cap_check_ = std::move(check); }
  // The GPU a tenant is on (`top`'s gpu column), if it has one; any thread;
  // set before start().
  using GpuOfTenant = std::function<std::optional<size_t>(scheduler::TenantId)>;
  void set_gpu_source(GpuOfTenant source) { gpu_of_ = std::move(source); }

 private:
  class Live;  // the admin table's view of this daemon (admin::LiveState)

  void apply(const policy::TenantPlan& plan);
  // The plan's scheduling parameters under the tenant's pin.
  scheduler::TenantParams params_for(const policy::TenantPlan& plan);
  nlohmann::json top(const policy::Actor& actor);
  void announce(scheduler::TenantId tenant, const char* what);

  policy::Store* const admin_store_;
  const uint32_t daemon_uid_;
  policy::Accounting accounting_;
  scheduler::DispatcherGroup* dispatcher_ = nullptr;
  executor::Backend* backend_ = nullptr;
  std::unique_ptr<AdminServer> server_;
  std::unique_ptr<LeaseKeeper> leases_;
  std::function<nlohmann::json()> status_;
  std::function<Result()> flush_;
  RequestHook request_hook_;
  PlacementSink placement_sink_;
  GpuOfTenant gpu_of_;
  CapCheck cap_check_;

  std::mutex mu_;  // guards connected_, announced_ and pins_
  std::unordered_set<scheduler::TenantId> connected_;
  std::unordered_map<scheduler::TenantId, scheduler::ParamsOverride> pins_;
  std::unordered_set<scheduler::TenantId> announced_;  // exhaustion logged once per episode
};

}  // namespace vgpu::host
