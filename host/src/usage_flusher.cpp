#include "vgpu/host/usage_flusher.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <vector>

namespace vgpu::host {

UsageFlusher::UsageFlusher(policy::Store* ledger, const scheduler::DispatcherGroup* dispatcher,
                           const executor::Backend* backend, QuotaControl* quotas,
                           std::chrono::milliseconds interval, WallClock now)
    : ledger_(ledger),
      dispatcher_(dispatcher),
      backend_(backend),
      quotas_(quotas),
      interval_(interval),
      now_(std::move(now)) {}

UsageFlusher::~UsageFlusher() { stop(); }

void UsageFlusher::report_host(bool at_start) {
  if (host_.name.empty() || (!at_start && host_.heartbeat_s == 0)) return;
  const int64_t at = now_();
  const policy::HostRow me{host_.name, started_at_, at, host_.backend,
                           host_.gpus ? host_.gpus() : "[]"};
  if (!at_start && me.gpus == reported_ && at - reported_at_ < host_.heartbeat_s) return;
  if (const Result r = ledger_->report_host(me); !r.ok()) {
    spdlog::warn("vgpud: could not report this host to the database: {}", r.message());
    return;
  }
  reported_ = me.gpus;
  reported_at_ = at;
}

void UsageFlusher::start() {
  {
    MutexLock one_at_a_time(flushing_);
    report_host(true);
  }
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "vgpu-ledger");  // for top -H, perf, gdb
    run();
  });
}

void UsageFlusher::stop() {
  {
    MutexLock lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  flush();
}

void UsageFlusher::seen(const std::string& vm) {
  MutexLock lock(mu_);
  seen_vms_.insert(vm);
}

void UsageFlusher::flush() {
  MutexLock one_at_a_time(flushing_);
  const int64_t hour = hour_of(now_());
  std::vector<policy::UsageRecord> batch;
  for (const auto& [tenant, now] : dispatcher_->usage_all()) {
    scheduler::TenantUsage& before = flushed_[tenant];
    if (now.commands == before.commands) continue;
    policy::UsageRecord r;
    r.tenant = tenant;
    r.interval_start = hour;
    r.gpu_ns = now.gpu_ns - before.gpu_ns;
    r.kernels = now.kernels - before.kernels;
    r.bytes_to_device = now.bytes_to_device - before.bytes_to_device;
    r.bytes_from_device = now.bytes_from_device - before.bytes_from_device;
    r.peak_memory = backend_->tenant_memory(tenant).peak;
    r.host = host_.name;
    if (host_.gpu_of) r.gpu = host_.gpu_of(tenant);
    batch.push_back(r);
    before = now;
  }
  quotas_->attribute(&batch);  // each VM's usage goes to the student it is bound to
  if (!batch.empty() && !ledger_->record_usage(batch).ok()) {
    spdlog::error("vgpud: could not write {} usage records to the database", batch.size());
  }
  report_host(false);
  std::unordered_set<std::string> seen;
  {
    MutexLock lock(mu_);
    seen.swap(seen_vms_);
  }
  for (const std::string& vm : seen) {
    scheduler::TenantId tenant = 0;
    if (!ledger_->tenant_for_vm(vm, &tenant).ok()) {  // marks it seen now
      spdlog::error("vgpud: could not write when VM {} was last seen to the database", vm);
    }
  }
}

void UsageFlusher::run() {
  MutexLock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(mu_, interval_, [this]() REQUIRES(mu_) { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    flush();
    lock.lock();
  }
}

}  // namespace vgpu::host
