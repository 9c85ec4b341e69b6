#include "vgpu/scheduler/dispatcher.h"

#include <algorithm>
#include <variant>

namespace vgpu::scheduler {

using executor::ExecResult;
using executor::Work;

struct Dispatcher::Tenant {
  TenantId id = 0;
  tbb::concurrent_queue<Command> queue;
  std::atomic<size_t> queued{0};
  std::atomic<bool> told_full{false};
  // Usage, written by the dispatcher thread, read by anyone.
  std::atomic<uint64_t> gpu_ns{0}, commands{0}, kernels{0}, bytes_in{0}, bytes_out{0};
  // Dispatcher thread only: contexts whose commands are dropped when popped.
  std::unordered_set<executor::ContextId> dead_contexts;
};

Dispatcher::Dispatcher(executor::Backend* backend, std::unique_ptr<Policy> policy,
                       QuotaGate* gate, const Clock* clock, DispatcherConfig config,
                       Completion on_complete, RoomCallback on_room)
    : backend_(backend),
      policy_(std::move(policy)),
      gate_(gate),
      clock_(clock),
      config_(config),
      on_complete_(std::move(on_complete)),
      on_room_(std::move(on_room)) {}

Dispatcher::~Dispatcher() { stop(); }

void Dispatcher::start() {
  running_ = true;
  thread_ = std::thread([this] { run(); });
}

void Dispatcher::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    running_ = false;
    wake_ = true;
  }
  cv_.notify_one();
  thread_.join();
  std::lock_guard lock(mu_);
  for (auto& [id, t] : tenants_) {
    Command c;
    while (t->queue.try_pop(c)) backend_->discard(c.work);
    t->queued = 0;
  }
}

std::shared_ptr<Dispatcher::Tenant> Dispatcher::find(TenantId id) const {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(id);
  return it == tenants_.end() ? nullptr : it->second;
}

void Dispatcher::add_tenant(TenantId tenant, const TenantParams& params) {
  std::lock_guard lock(mu_);
  if (tenants_.count(tenant)) return;
  auto t = std::make_shared<Tenant>();
  t->id = tenant;
  tenants_[tenant] = t;
  control_.push_back([this, tenant, params] { policy_->add_tenant(tenant, params, clock_->now()); });
  wake_ = true;
  cv_.notify_one();
}

void Dispatcher::update_tenant(TenantId tenant, const TenantParams& params) {
  std::lock_guard lock(mu_);
  control_.push_back(
      [this, tenant, params] { policy_->update_tenant(tenant, params, clock_->now()); });
  wake_ = true;
  cv_.notify_one();
}

void Dispatcher::remove_tenant(TenantId tenant) {
  std::promise<void> done;
  {
    std::lock_guard lock(mu_);
    control_.push_back([this, tenant, &done] {
      std::shared_ptr<Tenant> t;
      {
        std::lock_guard inner(mu_);
        auto it = tenants_.find(tenant);
        if (it != tenants_.end()) {
          t = it->second;
          tenants_.erase(it);
        }
      }
      if (t) {
        Command c;
        while (t->queue.try_pop(c)) backend_->discard(c.work);
      }
      waiting_.erase(tenant);
      policy_->remove_tenant(tenant, clock_->now());
      done.set_value();
    });
    wake_ = true;
  }
  cv_.notify_one();
  if (running_) done.get_future().wait();
}

void Dispatcher::submit(Command&& command) {
  auto t = find(command.tenant);
  if (!t) {
    backend_->discard(command.work);
    on_complete_(command, {Status::kDevicesUnavailable, 0});
    return;
  }
  const TenantId id = command.tenant;
  t->queue.push(std::move(command));
  if (t->queued.fetch_add(1) == 0) {
    became_runnable_.push(id);
    std::lock_guard lock(mu_);
    wake_ = true;
    cv_.notify_one();
  }
}

bool Dispatcher::accepting(TenantId tenant) const {
  auto t = find(tenant);
  if (!t) return true;  // submit() answers for unknown tenants
  if (t->queued.load() < config_.max_queued_per_tenant) return true;
  t->told_full = true;
  return false;
}

void Dispatcher::purge_context(TenantId tenant, executor::ContextId context) {
  std::promise<void> done;
  {
    std::lock_guard lock(mu_);
    control_.push_back([this, tenant, context, &done] {
      // Runs between commands, so none of this context is executing now.
      if (auto t = find(tenant); t && t->queued.load() > 0) t->dead_contexts.insert(context);
      done.set_value();
    });
    wake_ = true;
  }
  cv_.notify_one();
  if (running_) {
    done.get_future().wait();
  }
}

void Dispatcher::poke() {
  std::lock_guard lock(mu_);
  control_.push_back([this] {
    // Ask the gate again about every tenant it held back.
    std::vector<TenantId> held(waiting_.begin(), waiting_.end());
    for (TenantId id : held) {
      auto t = find(id);
      if (!t) {
        waiting_.erase(id);
        continue;
      }
      const Grant g = gate_->reserve(id, 0);
      gate_->settle(id, 0, 0);
      if (g.kind == Grant::Kind::kWait) continue;
      waiting_.erase(id);
      if (g.kind == Grant::Kind::kReject) {
        fail_queue(*t, g.error);
      } else if (t->queued.load() > 0) {
        policy_->runnable(id, clock_->now());
      }
    }
  });
  wake_ = true;
  cv_.notify_one();
}

TenantUsage Dispatcher::usage(TenantId tenant) const {
  auto t = find(tenant);
  if (!t) return {};
  return {t->gpu_ns.load(), t->commands.load(), t->kernels.load(), t->bytes_in.load(),
          t->bytes_out.load(), t->queued.load()};
}

std::unordered_map<TenantId, TenantUsage> Dispatcher::usage_all() const {
  std::vector<TenantId> ids;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, t] : tenants_) ids.push_back(id);
  }
  std::unordered_map<TenantId, TenantUsage> out;
  for (TenantId id : ids) out[id] = usage(id);
  return out;
}

void Dispatcher::apply_control() {
  std::vector<std::function<void()>> ops;
  {
    std::lock_guard lock(mu_);
    ops.swap(control_);
    wake_ = false;
  }
  for (auto& op : ops) op();
}

void Dispatcher::note_runnable() {
  TenantId id;
  while (became_runnable_.try_pop(id)) {
    if (!waiting_.count(id) && find(id)) policy_->runnable(id, clock_->now());
  }
}

void Dispatcher::account(Tenant& t, const Work& w, const ExecResult& r) {
  t.gpu_ns += r.gpu_ns;
  t.commands++;
  if (!ok(r.status)) return;
  if (std::holds_alternative<executor::Launch>(w.op)) t.kernels++;
  if (auto* c = std::get_if<executor::CopyHtoD>(&w.op)) t.bytes_in += c->size;
  if (auto* c = std::get_if<executor::CopyDtoH>(&w.op)) t.bytes_out += c->size;
}

void Dispatcher::fail_queue(Tenant& t, Status error) {
  Command c;
  while (t.queue.try_pop(c)) {
    if (t.dead_contexts.count(c.work.context)) {
      backend_->discard(c.work);
    } else {
      backend_->discard(c.work);
      on_complete_(c, {error, 0});
    }
    if (t.queued.fetch_sub(1) == 1) break;
  }
  t.dead_contexts.clear();
  policy_->idle(t.id, clock_->now());
}

bool Dispatcher::run_one_slice() {
  const Nanos now = clock_->now();
  const Decision d = policy_->pick(now);
  if (d.kind == Decision::Kind::kIdle) return false;
  if (d.kind == Decision::Kind::kWaitUntil) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::nanoseconds(std::max<Nanos>(d.until - now, 0)),
                 [this] { return wake_; });
    return true;
  }
  auto t = find(d.tenant);
  if (!t) {
    policy_->remove_tenant(d.tenant, now);
    return true;
  }
  if (t->queued.load() == 0) {  // the policy's view was stale
    policy_->idle(t->id, now);
    return true;
  }
  const Grant grant = gate_->reserve(t->id, d.slice);
  if (grant.kind == Grant::Kind::kWait) {
    gate_->settle(t->id, 0, 0);
    policy_->idle(t->id, now);
    waiting_.insert(t->id);
    return true;
  }
  if (grant.kind == Grant::Kind::kReject) {
    gate_->settle(t->id, 0, 0);
    fail_queue(*t, grant.error);
    return true;
  }
  const Nanos budget = std::min(d.slice, grant.budget);
  Nanos used = 0;
  Command c;
  while (t->queue.try_pop(c)) {
    if (t->dead_contexts.count(c.work.context)) {
      backend_->discard(c.work);
    } else {
      const ExecResult r = backend_->execute(c.work);
      used += static_cast<Nanos>(r.gpu_ns);
      policy_->charge(t->id, static_cast<Nanos>(r.gpu_ns), clock_->now());
      account(*t, c.work, r);
      on_complete_(c, r);
    }
    const size_t left = t->queued.fetch_sub(1) - 1;
    if (left < config_.max_queued_per_tenant / 2 && t->told_full.exchange(false)) on_room_();
    if (left == 0) {
      t->dead_contexts.clear();
      policy_->idle(t->id, clock_->now());
      break;
    }
    if (used >= budget) break;
  }
  gate_->settle(t->id, budget, used);
  return true;
}

void Dispatcher::run() {
  while (running_) {
    apply_control();
    note_runnable();
    if (run_one_slice()) continue;
    // Nothing runnable: sleep until a submit, a control op, or a periodic
    // re-check of tenants the gate holds back.
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(waiting_.empty() ? 1000 : 100),
                 [this] { return wake_ || !became_runnable_.empty(); });
    if (!waiting_.empty() && !wake_) {
      lock.unlock();
      poke();
    }
  }
}

}  // namespace vgpu::scheduler
