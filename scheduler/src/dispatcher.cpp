#include "vgpu/scheduler/dispatcher.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <deque>
#include <variant>

#include <tbb/concurrent_queue.h>

#include "dispatcher_tenant.h"
#include "vgpu/protocol/rows.h"
#include "vgpu/scheduler/policy_factory.h"
#include "vgpu/scheduler/turn.h"

namespace vgpu::scheduler {

using executor::ExecResult;
using executor::Work;

class Dispatcher::Arrivals : public tbb::concurrent_queue<Arrival> {};

// The tenants' queues as a turn sees them (turn.h).
// state() is asked right before a turn; the tenant it found is kept for the
// turn's commands, so running one costs no lookup.
class Dispatcher::Queues final : public TurnSource {
 public:
  explicit Queues(Dispatcher* d) : d_(d) {}
  QueueState state(TenantId tenant) override {
    turn_ = d_->find(tenant);
    if (!turn_) return QueueState::kGone;
    return turn_->queued.load() == 0 ? QueueState::kEmpty : QueueState::kReady;
  }
  bool run_next(TenantId tenant, Nanos budget, Nanos* gpu_time, bool* more) override {
    if (!turn_ || turn_->id != tenant) turn_ = d_->find(tenant);
    return turn_ && d_->run_next(*turn_, budget, gpu_time, more);
  }
  void after_command(ArrivalListener& arrivals) override { d_->note_runnable(&arrivals); }
  void end_turn() { turn_.reset(); }

 private:
  Dispatcher* const d_;
  std::shared_ptr<Tenant> turn_;
};

Dispatcher::Dispatcher(executor::Backend* backend, std::unique_ptr<SchedulingPolicy> policy,
                       QuotaGate* gate, const Clock* clock, DispatcherConfig config,
                       Completion on_complete, RoomCallback on_room)
    : backend_(backend),
      policy_(std::move(policy)),
      gate_(gate),
      clock_(clock),
      config_(config),
      on_complete_(std::move(on_complete)),
      on_room_(std::move(on_room)),
      policy_name_(policy_->name()),
      queues_(std::make_unique<Queues>(this)),
      overlap_depth_(std::clamp<uint32_t>(config.overlap_depth, 1, kMaxOverlapDepth)) {
  became_runnable_ = std::make_unique<Arrivals>();
}

Dispatcher::~Dispatcher() { stop(); }

void Dispatcher::start() {
  running_ = true;
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "vgpu-dispatch");  // for top -H, perf, gdb
    run();
  });
}

void Dispatcher::stop() {
  if (!thread_.joinable()) return;
  {
    MutexLock lock(mu_);
    running_ = false;
    wake_ = true;
  }
  cv_.notify_one();
  thread_.join();
  {
    MutexLock lock(mu_);
    for (auto& [id, t] : tenants_) {
      Command c;
      while (pop(*t, &c)) backend_->discard(c.work);
      t->queued = 0;
    }
  }
  run_retired();  // the thread is gone: nothing runs
}

Result Dispatcher::configure_policy(std::string_view name, const PolicyOptions& options) {
  if (Result r = check_policy(name, options); !r.ok()) return r;
  MutexLock lock(mu_);
  policy_name_ = std::string(name);
  control_.push_back([this, wanted = std::string(name), options] {
    if (policy_->name() == wanted) {
      policy_->set_options(options);
      return;
    }
    std::unique_ptr<SchedulingPolicy> next;
    if (!make_policy(wanted, options, &next).ok()) return;  // checked above
    std::vector<std::pair<std::shared_ptr<Tenant>, TenantParams>> all;
    {
      MutexLock inner(mu_);
      for (const auto& [id, t] : tenants_) all.emplace_back(t, t->params);
    }
    const Nanos now = clock_->now();
    for (const auto& [t, params] : all) {
      next->add_tenant(t->id, params, now);
      // Tenants still in became_runnable_ are told again by note_runnable.
      if (t->queued.load() > 0 && !waiting_.count(t->id)) next->runnable(t->id, now);
    }
    policy_ = std::move(next);
  });
  wake_ = true;
  cv_.notify_one();
  return {};
}

std::string Dispatcher::policy_name() const {
  MutexLock lock(mu_);
  return policy_name_;
}

void Dispatcher::set_overlap_depth(uint32_t depth) {
  overlap_depth_ = std::clamp<uint32_t>(depth, 1, kMaxOverlapDepth);
}

void Dispatcher::tell_params(TenantId tenant) {
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return;
  const TenantParams params = it->second->params;
  control_.push_back(
      [this, tenant, params] { policy_->update_tenant(tenant, params, clock_->now()); });
  wake_ = true;
  cv_.notify_one();
}

std::optional<TenantParams> Dispatcher::tenant_params(TenantId tenant) const {
  MutexLock lock(mu_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return std::nullopt;
  return it->second->params;
}

std::shared_ptr<Dispatcher::Tenant> Dispatcher::find(TenantId id) const {
  MutexLock lock(mu_);
  auto it = tenants_.find(id);
  return it == tenants_.end() ? nullptr : it->second;
}

Dispatcher::Tenant* Dispatcher::submitter_find(TenantId id) const {
  if (const uint64_t gen = tenants_gen_.load(std::memory_order_acquire); gen != submitter_gen_) {
    MutexLock lock(mu_);
    submitter_tenants_ = tenants_;
    submitter_gen_ = tenants_gen_.load(std::memory_order_relaxed);
  }
  auto it = submitter_tenants_.find(id);
  return it == submitter_tenants_.end() ? nullptr : it->second.get();
}

void Dispatcher::add_tenant(TenantId tenant, const TenantParams& params) {
  MutexLock lock(mu_);
  if (tenants_.count(tenant)) return;
  auto t = std::make_shared<Tenant>();
  t->id = tenant;
  t->params = params;
  auto& usage = usage_[tenant];
  if (!usage) usage = std::make_shared<Usage>();
  t->usage = usage;
  tenants_[tenant] = t;
  tenants_gen_.fetch_add(1, std::memory_order_release);
  control_.push_back([this, t, params] {
    const Nanos now = clock_->now();
    policy_->add_tenant(t->id, params, now);
    known_.insert(t->id);
    if (t->queued.load() > 0 && !waiting_.count(t->id)) policy_->runnable(t->id, now);
  });
  wake_ = true;
  cv_.notify_one();
}

void Dispatcher::update_tenant(TenantId tenant, const TenantParams& params) {
  MutexLock lock(mu_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return;  // not added (or removed): nothing to tell
  it->second->params = params;
  tell_params(tenant);
}

void Dispatcher::remove_tenant(TenantId tenant, Retired retired) {
  // Gone at once for submit(), accepting() and the turns; the queue is
  // dropped and the policy told on the dispatcher thread, between turns.
  std::shared_ptr<Tenant> t;
  {
    MutexLock lock(mu_);
    if (auto it = tenants_.find(tenant); it != tenants_.end()) {
      t = it->second;
      tenants_.erase(it);
      tenants_gen_.fetch_add(1, std::memory_order_release);
      t->removed.store(true);
    }
    control_.push_back([this, t, tenant] {
      if (t) {
        Command c;
        while (pop(*t, &c)) backend_->discard(c.work);
        if (t->queued.exchange(0) > 0) with_work_.fetch_sub(1);
      }
      waiting_.erase(tenant);
      known_.erase(tenant);
      policy_->remove_tenant(tenant, clock_->now());
    });
    wake_ = true;
  }
  cv_.notify_one();
  if (!retired) return;
  if (!t) {
    retired();
    return;
  }
  retire([&] { return running_tenant_.load() == tenant || flight_tenant_.load() == tenant; },
         std::move(retired));
}

void Dispatcher::submit(Command&& command) {
  const TenantId tenant = command.tenant;
  submit(tenant, {&command, 1});
}

void Dispatcher::submit(TenantId tenant, std::span<Command> commands) {
  if (commands.empty()) return;
  Tenant* t = submitter_find(tenant);
  if (!t) {
    for (Command& c : commands) {
      backend_->discard(c.work);
      on_complete_(c, {Status::kDevicesUnavailable, 0});
    }
    return;
  }
  {
    MutexLock lock(t->inbox_mu);
    for (Command& c : commands) t->inbox.push_back(std::move(c));
  }
  if (t->queued.fetch_add(commands.size()) == 0) {
    with_work_.fetch_add(1);
    became_runnable_->push({tenant, clock_->now()});
    MutexLock lock(mu_);
    wake_ = true;
    cv_.notify_one();
  }
}

bool Dispatcher::accepting(TenantId tenant) const {
  Tenant* t = submitter_find(tenant);
  if (!t) return true;  // submit() answers for unknown tenants
  if (t->queued.load() < config_.max_queued_per_tenant) return true;
  t->told_full = true;
  return false;
}

void Dispatcher::purge_context(TenantId tenant, executor::ContextId context, Retired retired) {
  // Marked here, not by a control op: those wait for the end of a turn, and
  // a turn of another tenant's long kernels would hold up the caller.
  if (auto t = find(tenant); t && (t->queued.load() > 0 || t->in_flight.load() > 0)) {
    MutexLock lock(t->dead_mu);
    if (t->dead_contexts.insert(context).second) t->dead_count.fetch_add(1);
  }
  // A command of the context the dispatcher took before the mark may be
  // running, or launches of it left on the device.
  retire([&] { return running_context_.load() == context || flight_context_.load() == context; },
         std::move(retired));
}

void Dispatcher::begin_running(TenantId tenant, executor::ContextId context) {
  // Published before is_dead() looks (seq_cst both ways): a purge or removal
  // either is seen by is_dead() or sees this and leaves its callback to
  // end_running().
  running_tenant_.store(tenant);
  running_context_.store(context);
}

void Dispatcher::end_running() {
  running_context_.store(kNothingRunning);
  running_tenant_.store(kNothingRunning);
  // Read after the stores above (seq_cst): a callback left by a caller that
  // saw this command running is counted by now (retire()). It may be waiting
  // for launches left on the device: those finish first.
  if (retired_count_.load() > 0) settle_flight();
}

template <class Running>
void Dispatcher::retire(Running running, Retired retired) {
  if (!retired) return;
  // What was marked dead cannot start any more, so once `running()` is false
  // it has finished for good.
  if (!running()) {
    retired();
    return;
  }
  uint64_t mine;
  {
    MutexLock lock(retired_mu_);
    mine = ++retired_seq_;
    retired_.emplace_back(mine, std::move(retired));
    retired_count_.fetch_add(1);
  }
  // It may have ended between the look above and the count: then
  // end_running() might not have seen the callback, so take it back (unless
  // it did) and run it here.
  if (running()) return;
  Retired back;
  {
    MutexLock lock(retired_mu_);
    auto it = std::find_if(retired_.begin(), retired_.end(),
                           [&](const auto& r) { return r.first == mine; });
    if (it == retired_.end()) return;  // end_running() took it
    back = std::move(it->second);
    retired_.erase(it);
    retired_count_.fetch_sub(1);
  }
  back();
}

void Dispatcher::run_retired() {
  std::vector<std::pair<uint64_t, Retired>> due;
  {
    MutexLock lock(retired_mu_);
    due.swap(retired_);
    retired_count_.store(0);
  }
  for (auto& [seq, retired] : due) retired();
}

bool Dispatcher::is_dead(Tenant& t, executor::ContextId context) {
  if (t.removed.load()) return true;
  if (t.dead_count.load() == 0) return false;
  MutexLock lock(t.dead_mu);
  return t.dead_contexts.count(context) != 0;
}

void Dispatcher::forget_dead(Tenant& t) {
  // The queue is empty and nothing is in flight: no command of a dead
  // context is left to drop or to leave unanswered.
  if (t.dead_count.load() == 0 || t.in_flight.load() > 0) return;
  MutexLock lock(t.dead_mu);
  t.dead_contexts.clear();
  t.dead_count.store(0);
}

void Dispatcher::poke() {
  MutexLock lock(mu_);
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
  std::shared_ptr<Usage> u;
  size_t queued = 0;
  {
    MutexLock lock(mu_);
    auto it = usage_.find(tenant);
    if (it == usage_.end()) return {};
    u = it->second;
    if (auto t = tenants_.find(tenant); t != tenants_.end()) queued = t->second->queued.load();
  }
  return {u->gpu_ns.load(), u->commands.load(), u->kernels.load(), u->bytes_in.load(),
          u->bytes_out.load(), queued};
}

std::unordered_map<TenantId, TenantUsage> Dispatcher::usage_all() const {
  std::vector<TenantId> ids;
  {
    MutexLock lock(mu_);
    for (const auto& [id, u] : usage_) ids.push_back(id);
  }
  std::unordered_map<TenantId, TenantUsage> out;
  for (TenantId id : ids) out[id] = usage(id);
  return out;
}

void Dispatcher::apply_control() {
  std::vector<std::function<void()>> ops;
  {
    MutexLock lock(mu_);
    ops.swap(control_);
    wake_ = false;
  }
  // An op may fail a queue or drop a tenant: launches in flight are
  // answered first, in order.
  if (!ops.empty()) finish_flight();
  for (auto& op : ops) op();
}

void Dispatcher::note_runnable(TurnSource::ArrivalListener* arrivals) {
  Arrival a;
  while (became_runnable_->try_pop(a)) {
    // An unknown tenant's add is still on its way: it makes it runnable then.
    if (waiting_.count(a.tenant) || !known_.count(a.tenant)) continue;
    if (arrivals) arrivals->before_runnable(a.at);
    policy_->runnable(a.tenant, clock_->now());
  }
}

void Dispatcher::Tally::add(const Work& w, const ExecResult& r) {
  gpu_ns += r.gpu_ns;
  commands++;
  if (!ok(r.status)) return;
  if (std::holds_alternative<executor::Launch>(w.op)) kernels++;
  if (auto* c = std::get_if<executor::CopyHtoD>(&w.op)) bytes_in += c->size;
  if (auto* c = std::get_if<executor::CopyDtoH>(&w.op)) bytes_out += c->size;
  if (auto* c = std::get_if<executor::CopyRows>(&w.op)) {
    if (c->kind == proto::kRowsHostToDevice) bytes_in += c->width * c->height;
    if (c->kind == proto::kRowsDeviceToHost) bytes_out += c->width * c->height;
  }
}

void Dispatcher::account(Usage& u, const Work& w, const ExecResult& r) {
  Tally t;
  t.add(w, r);
  t.into(u);
}

void Dispatcher::fail_queue(Tenant& t, Status error) {
  Command c;
  while (pop(t, &c)) {
    backend_->discard(c.work);
    if (!is_dead(t, c.work.context)) on_complete_(c, {error, 0});
    if (t.queued.fetch_sub(1) == 1) {
      with_work_.fetch_sub(1);
      break;
    }
  }
  forget_dead(t);
  policy_->idle(t.id, clock_->now());
}

bool Dispatcher::pop(Tenant& t, Command* out) {
  if (t.taken.empty()) {
    MutexLock lock(t.inbox_mu);
    t.taken.swap(t.inbox);
  }
  if (t.taken.empty()) return false;
  *out = std::move(t.taken.front());
  t.taken.pop_front();
  return true;
}

bool Dispatcher::run_next(Tenant& tenant, Nanos budget, Nanos* gpu_time, bool* more) {
  Tenant* t = &tenant;
  Command c;
  if (!pop(*t, &c)) return false;
  *gpu_time = 0;
  size_t done = 1;
  begin_running(t->id, c.work.context);
  if (is_dead(*t, c.work.context)) {
    backend_->discard(c.work);
  } else if (config_.max_batch > 1 && backend_->batches(c.work.op)) {
    // Consecutive items of the same context that the backend takes in a
    // batch (launches, and on the cuda backend copies, memsets and event
    // records too) go to it together.
    const executor::ContextId context = c.work.context;
    batch_.clear();
    batch_.push_back(std::move(c));
    Command next;
    while (batch_.size() < config_.max_batch && pop(*t, &next)) {
      if (!backend_->batches(next.work.op) || next.work.context != context) {
        t->taken.push_front(std::move(next));
        break;
      }
      batch_.push_back(std::move(next));
    }
    if (known_.size() > 1 && clock_->now() - last_emptied_ < config_.woke_recently_ns) {
      budget = std::min(budget, config_.batch_step_ns);
    }
    done = run_batch(*t, budget, gpu_time);
  } else {
    finish_flight();
    const ExecResult r = backend_->execute(c.work);
    *gpu_time = static_cast<Nanos>(r.gpu_ns);
    account(*t->usage, c.work, r);
    // Purged while it ran: nobody waits for the answer (and the channel may be gone).
    if (!is_dead(*t, c.work.context)) on_complete_(c, r);
  }
  end_running();
  const size_t left = t->queued.fetch_sub(done) - done;
  if (left < config_.max_queued_per_tenant / 2 && t->told_full.exchange(false)) on_room_();
  if (left == 0) {
    with_work_.fetch_sub(1);
    forget_dead(*t);
    last_emptied_ = clock_->now();
  }
  *more = left > 0;
  return true;
}

bool Dispatcher::run_one_slice() {
  const Nanos now = clock_->now();
  const TurnPlan plan = plan_turn(*policy_, *gate_, *queues_, now);
  switch (plan.kind) {
    case TurnPlan::Kind::kIdle:
      settle_flight();  // nothing else to run: its answers go now
      return false;
    case TurnPlan::Kind::kWaitUntil: {
      settle_flight();
      MutexLock lock(mu_);
      cv_.wait_for(mu_, std::chrono::nanoseconds(std::max<Nanos>(plan.until - now, 0)),
                   [this] { return wake_ || !became_runnable_->empty(); });
      return true;
    }
    case TurnPlan::Kind::kRetry:
      return true;
    case TurnPlan::Kind::kHeld:
      waiting_.insert(plan.tenant);
      return true;
    case TurnPlan::Kind::kRejected:
      settle_flight();  // answered before the queue behind it fails
      if (auto t = find(plan.tenant)) fail_queue(*t, plan.error);
      return true;
    case TurnPlan::Kind::kRun:
      run_turn(*policy_, *gate_, *queues_, *clock_, plan);
      break;
  }
  queues_->end_turn();
  return true;
}

bool Dispatcher::poll_for_work() const {
  // The work just finished was someone's answer, and the program waiting for
  // it, or the transport thread that will bring the next request, may share
  // this core: give it the core at once, not after the pause below.
  sched_yield();
  const auto start = std::chrono::steady_clock::now();
  for (auto now = start; now - start < config_.poll_before_sleep;
       now = std::chrono::steady_clock::now()) {
    if (wake_.load(std::memory_order_relaxed) || !became_runnable_->empty()) return true;
    // Pause briefly, then give the core to whoever has work (the program or
    // the transport thread may be waiting for one).
    proto::poll_step(now - start);
  }
  return false;
}

void Dispatcher::run() {
  while (running_) {
    apply_control();
    note_runnable();
    if (run_one_slice()) continue;
    if (poll_for_work()) continue;
    // Nothing runnable: sleep until a submit, a control op, or a periodic
    // re-check of tenants the gate holds back.
    MutexLock lock(mu_);
    cv_.wait_for(mu_, std::chrono::milliseconds(waiting_.empty() ? 1000 : 100),
                 [this] { return wake_ || !became_runnable_->empty(); });
    if (!waiting_.empty() && !wake_) {
      lock.unlock();
      poke();
    }
  }
  settle_flight();
}

}  // namespace vgpu::scheduler
