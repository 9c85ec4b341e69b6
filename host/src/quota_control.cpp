#include "vgpu/host/quota_control.h"

#include <pwd.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>

#include "admin_ops.h"
#include "admin_protocol.h"
#include "vgpu/host/vm_people.h"
#include "vgpu/policy/units.h"

namespace vgpu::host {

using nlohmann::json;
using scheduler::Grant;
using scheduler::TenantId;

namespace {

int64_t unix_now() { return static_cast<int64_t>(std::time(nullptr)); }

scheduler::TenantParams params_of(const policy::TenantPlan& p) {
  if (p.best_effort) return {1, kBestEffortGroup, 1};
  return {std::max<uint32_t>(p.weight, 1), p.course, std::max<uint32_t>(p.course_weight, 1)};
}

std::string who(const policy::TenantStatus& s) {
  return "vm " + s.vm + (s.student.empty() ? " (unassigned)" : " (student " + s.student + ")");
}

}  // namespace

QuotaControl::QuotaControl(policy::Store* store, policy::Store* admin_store, uint32_t daemon_uid)
    : admin_store_(admin_store), daemon_uid_(daemon_uid), accounting_(store, unix_now) {}

QuotaControl::~QuotaControl() { stop(); }

void QuotaControl::enable_leases(policy::Store* lease_store, const std::string& host,
                                 const policy::LeaseRules& rules) {
  leases_ = std::make_unique<LeaseKeeper>(lease_store, &accounting_, host, rules, [this] {
    if (dispatcher_) dispatcher_->poke();  // tenants held for a lease run now
  });
  accounting_.enable_leases([keeper = leases_.get()] { keeper->wake(); });
}

Result QuotaControl::start(scheduler::DispatcherGroup* dispatcher, executor::Backend* backend,
                           const std::string& runtime_dir) {
  dispatcher_ = dispatcher;
  backend_ = backend;
  if (leases_) leases_->start();
  AdminServer::Limits limits;
  limits.privileged = {0, daemon_uid_};  // the admins handle() trusts without a user row
  server_ = std::make_unique<AdminServer>(
      runtime_dir + "/" + std::string(admin::kAdminSocketName),
      [this](uint32_t uid, const std::string& line) { return handle(uid, line); }, limits);
  return server_->start();
}

void QuotaControl::stop() {
  if (server_) server_->stop();
  if (leases_) leases_->stop();
}

bool QuotaControl::admit(TenantId tenant, scheduler::TenantParams* params, std::string* why) {
  const policy::TenantPlan p = accounting_.connect(tenant);
  if (!p.admitted) {
    *why = p.why;
    spdlog::warn("vgpud: refused a channel: {}", p.why);
    return false;
  }
  if (cap_check_) {
    if (const Result r = cap_check_(p.memory_cap); !r.ok()) {
      *why = "VM refused: " + r.message() + "; a teacher lowers it with `vgpuctl quota set`";
      spdlog::warn("vgpud: refused a channel of tenant {}: {}", tenant, r.message());
      return false;
    }
  }
  backend_->set_memory_cap(tenant, p.memory_cap);
  if (placement_sink_) placement_sink_(tenant, p.placement);
  *params = params_for(p);
  const policy::TenantStatus who = accounting_.status_of(tenant);
  remember_vm(tenant, {who.vm, who.student, who.course});  // its log lines' and metrics' labels
  std::lock_guard lock(mu_);
  connected_.insert(tenant);
  return true;
}

void QuotaControl::disconnected(TenantId tenant) {
  std::lock_guard lock(mu_);
  connected_.erase(tenant);
}

void QuotaControl::attribute(std::vector<policy::UsageRecord>* batch) {
  accounting_.attribute(batch);
}

void QuotaControl::apply(const policy::TenantPlan& plan) {
  backend_->set_memory_cap(plan.tenant, plan.memory_cap);
  if (placement_sink_) placement_sink_(plan.tenant, plan.placement);
  dispatcher_->update_tenant(plan.tenant, params_for(plan));
}

scheduler::TenantParams QuotaControl::params_for(const policy::TenantPlan& plan) {
  std::lock_guard lock(mu_);
  auto pin = pins_.find(plan.tenant);
  return pin == pins_.end() ? params_of(plan) : pin->second.apply(params_of(plan));
}

void QuotaControl::pin(TenantId tenant, const scheduler::ParamsOverride& pin) {
  {
    std::lock_guard lock(mu_);
    auto it = pins_.find(tenant);
    if (it == pins_.end() ? pin.empty() : it->second == pin) return;
    if (pin.empty()) {
      pins_.erase(tenant);
    } else {
      pins_[tenant] = pin;
    }
    if (!connected_.count(tenant) || !dispatcher_) return;  // applied when it is admitted
  }
  dispatcher_->update_tenant(tenant, params_for(accounting_.plan(tenant)));
}

void QuotaControl::announce(TenantId tenant, const char* what) {
  {
    std::lock_guard lock(mu_);
    if (!announced_.insert(tenant).second) return;
  }
  const policy::TenantStatus s = accounting_.status_of(tenant);
  const bool range = s.quota.gpu_time.period == policy::PeriodKind::kRange;
  spdlog::warn("vgpud: {}: GPU-time quota {} exhausted ({} used); {} {}", who(s),
               policy::format_gpu_time(s.quota.gpu_time),
               policy::format_duration(s.budget.spent_ns), what,
               range ? "until a teacher raises the quota"
                     : "until " + policy::format_time(s.budget.window.end) +
                           " UTC or until a teacher raises the quota");
}

Grant QuotaControl::reserve(TenantId tenant, scheduler::Nanos want) {
  const policy::Admission d = accounting_.reserve(tenant, want);
  if (d.plan_changed && dispatcher_) {
    const policy::TenantPlan p = accounting_.plan(tenant);
    dispatcher_->update_tenant(tenant, params_for(p));
    if (p.best_effort) announce(tenant, "its work now runs best-effort");
  }
  switch (d.kind) {
    case policy::Admission::Kind::kRun:
      if (!d.best_effort) {
        std::lock_guard lock(mu_);
        announced_.erase(tenant);
      }
      return {Grant::Kind::kRun, d.budget_ns, Status::kSuccess};
    case policy::Admission::Kind::kWait:
      if (!d.lease_pending) announce(tenant, "its work waits");
      return {Grant::Kind::kWait, 0, Status::kSuccess};
    case policy::Admission::Kind::kReject:
      announce(tenant, "its work is rejected (cudaErrorNotPermitted)");
      return {Grant::Kind::kReject, 0, kQuotaExhausted};
  }
  return {Grant::Kind::kRun, want, Status::kSuccess};
}

void QuotaControl::settle(TenantId tenant, scheduler::Nanos reserved, scheduler::Nanos used) {
  accounting_.settle(tenant, reserved, used);
}

class QuotaControl::Live final : public admin::LiveState {
 public:
  explicit Live(QuotaControl* quotas) : quotas_(quotas) {}
  json top(const policy::Actor& by) override { return quotas_->top(by); }
  json status() override { return quotas_->status_ ? quotas_->status_() : json::object(); }
  Result flush_usage() override {
    if (!quotas_->flush_) return Result::unavailable("this daemon cannot flush its usage");
    return quotas_->flush_();
  }

 private:
  QuotaControl* const quotas_;
};

std::string QuotaControl::handle(uint32_t uid, const std::string& line) {
  const json request = json::parse(line, nullptr, false);
  if (request.is_discarded() || !request.is_object()) {
    return admin::error_answer("a request is one JSON object per line").dump();
  }
  policy::Actor actor;
  if (const vgpu::Result known = admin_store_->actor_for_uid(uid, &actor); !known.ok()) {
    if (uid != 0 && uid != daemon_uid_) return admin::error_answer(known).dump();
    actor.uid = uid;
    const passwd* pw = getpwuid(uid);
    actor.name = pw ? pw->pw_name : "uid " + std::to_string(uid);
  }
  if (uid == 0 || uid == daemon_uid_) actor.role = policy::Role::kAdmin;

  // A vgpuctl of another vgpu release: said plainly, not as a wrong field.
  if (const auto it = request.find("protocol"); it != request.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() != admin::kProtocolVersion) {
      return admin::error_answer("this vgpuctl speaks admin protocol " + it->dump() +
                                 ", vgpud speaks " + std::to_string(admin::kProtocolVersion) +
                                 ": use the vgpuctl installed with this vgpud (compare "
                                 "`vgpuctl --version` and `vgpud --version`)")
          .dump();
    }
  }
  // Every field is read by type: {"op": 1} is a wrong request, not an exception.
  const std::string op = admin::op_of(request);
  Live live(this);
  const admin::OpResult r = admin::execute(*admin_store_, actor, request, unix_now(), &live);
  if (r.changed) {
    // Changes apply at once: new caps, weights and budgets for every
    // connected VM, and tenants held by `wait` are asked about again.
    std::vector<policy::TenantPlan> plans = accounting_.refresh();
    {
      std::lock_guard lock(mu_);
      std::erase_if(plans,
                    [this](const policy::TenantPlan& p) { return !connected_.count(p.tenant); });
      announced_.clear();
    }
    for (const policy::TenantPlan& p : plans) apply(p);
    dispatcher_->poke();
    spdlog::info("vgpud: {} ({}) {}", actor.name, policy::role_name(actor.role), op);
  }
  if (request_hook_) {
    json answer = r.answer;
    request_hook_(request, &answer);
    return answer.dump();
  }
  return r.answer.dump();
}

Status QuotaControl::budget(TenantId tenant, executor::TenantBudget* out) {
  {
    std::lock_guard lock(mu_);
    if (!connected_.count(tenant)) return Status::kInvalidValue;
  }
  const policy::TenantStatus s = accounting_.status_of(tenant);
  if (s.tenant != tenant) return Status::kInvalidValue;
  out->bound = !s.student.empty();
  out->limited = s.budget.limited;
  out->open = s.budget.open;
  out->best_effort = s.best_effort;
  out->renews = s.quota.gpu_time.period != policy::PeriodKind::kRange;
  out->budget_ns = s.budget.budget_ns;
  out->spent_ns = s.budget.spent_ns;
  out->left_ns = s.budget.limited ? s.budget.left_ns() : 0;
  out->window_start = s.budget.window.start;
  out->window_end = s.budget.window.end;
  out->memory_cap = s.quota.memory;
  out->on_exhaust = static_cast<uint32_t>(s.quota.on_exhaust);
  out->vm = s.vm;
  out->student = s.student;
  out->course = s.course;
  out->quota = policy::format_gpu_time(s.quota.gpu_time);
  return Status::kSuccess;
}

json QuotaControl::top(const policy::Actor& actor) {
  std::unordered_set<TenantId> connected;
  {
    std::lock_guard lock(mu_);
    connected = connected_;
  }
  // Teachers see their own courses' VMs only.
  std::unordered_set<std::string> courses;
  if (actor.role != policy::Role::kAdmin) {
    std::vector<policy::CourseRow> rows;
    (void)admin_store_->list_courses(actor, &rows);  // never fails
    for (const auto& c : rows) courses.insert(c.name);
  }
  const auto usage = dispatcher_->usage_all();
  json tenants = json::array();
  for (const policy::TenantStatus& s : accounting_.status()) {
    if (!connected.count(s.tenant)) continue;
    if (actor.role != policy::Role::kAdmin && !courses.count(s.course)) continue;
    auto u = usage.find(s.tenant);
    const scheduler::TenantUsage use = u == usage.end() ? scheduler::TenantUsage{} : u->second;
    const bool spent = s.budget.limited && s.budget.left_ns() == 0;
    std::string state = use.queued ? "busy" : "idle";
    if (spent) {
      state = s.quota.on_exhaust == policy::OnExhaust::kWait     ? "waiting (quota)"
              : s.quota.on_exhaust == policy::OnExhaust::kReject ? "rejected (quota)"
                                                                 : "best-effort";
    }
    json row = {{"vm", s.vm},
                {"student", s.student},
                {"course", s.course},
                {"gpu_ns", use.gpu_ns},
                {"kernels", use.kernels},
                {"queued", use.queued},
                {"limited", s.budget.limited},
                {"quota", policy::format_gpu_time(s.quota.gpu_time)},
                {"spent_ns", s.budget.spent_ns},
                {"left_ns", s.budget.limited ? s.budget.left_ns() : -1},
                {"on_exhaust", policy::on_exhaust_name(s.quota.on_exhaust)},
                {"memory_cap", s.quota.memory},
                {"state", state}};
    if (const std::optional<size_t> gpu = gpu_of_ ? gpu_of_(s.tenant) : std::nullopt) {
      row["gpu"] = *gpu;
    }
    tenants.push_back(std::move(row));
  }
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return {{"now_ns", std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()},
          {"tenants", tenants}};
}

}  // namespace vgpu::host
