#include "vgpu/host/usage_flusher.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
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

void UsageFlusher::set_aside(int64_t seq, const Result& refused) {
  if (const Result r = spool_->set_aside(seq, refused.message()); !r.ok()) {
    spdlog::error("vgpud: usage batch {} lost: {}; it could not be set aside: {}", seq,
                  refused.message(), r.message());
    return;
  }
  spdlog::error(
      "vgpud: usage batch {} set aside in the spool (table set_aside): {}; the "
      "batches after it go on",
      seq, refused.message());
}

Result UsageFlusher::write_spooled(std::vector<policy::UsageRecord> batch) {
  if (!batch.empty()) {
    // Numbers increase across restarts: the clock's nanoseconds, or one more.
    const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    const int64_t seq = last_seq_ = std::max(last_seq_ + 1, now_ns);
    bool applied = false;
    Result sent = Result::storage("batches are waiting in the spool");
    if (spooled_ == 0) sent = ledger_->record_host_usage(host_.name, seq, batch, &applied);
    if (sent.code() == Result::Code::kConflict) {
      // Refused for its data: kept aside, not retried.
      if (const Result kept = spool_->put(seq, batch); kept.ok()) {
        set_aside(seq, sent);
      } else {
        spdlog::error("vgpud: {} usage records lost: {}", batch.size(), kept.message());
      }
    } else if (!sent.ok()) {
      if (spooled_ == 0) {
        spdlog::warn(
            "vgpud: the database cannot take usage now ({}); keeping it in the spool "
            "until it can",
            sent.message());
      }
      if (const Result kept = spool_->put(seq, batch); kept.ok()) {
        ++spooled_;
      } else {
        spdlog::error("vgpud: {} usage records lost: {}", batch.size(), kept.message());
      }
    }
  }
  Result last = Result();  // why the last replay stopped
  int64_t replayed = 0;
  while (spooled_ > 0) {
    int64_t seq = 0;
    std::vector<policy::UsageRecord> waiting;
    if (const Result r = spool_->oldest(&seq, &waiting); !r.ok() || seq == 0) {
      if (!r.ok()) spdlog::error("vgpud: {}", r.message());
      spooled_ = r.ok() ? 0 : spooled_;
      break;
    }
    bool applied = false;
    last = ledger_->record_host_usage(host_.name, seq, waiting, &applied);
    if (last.code() == Result::Code::kConflict) {
      set_aside(seq, last);  // the batches behind it go on
      --spooled_;
      last = Result();
      continue;
    }
    if (!last.ok()) break;
    if (const Result r = spool_->remove(seq); !r.ok()) {
      spdlog::error("vgpud: {}", r.message());  // replayed again later: applied once all the same
      break;
    }
    --spooled_;
    ++replayed;
  }
  if (replayed > 0) {
    spdlog::info("vgpud: wrote {} usage batches kept while the database could not take them{}",
                 replayed, spooled_ ? fmt::format(" ({} wait still)", spooled_) : "");
  }
  if (spooled_ == 0) return {};
  return Result::unavailable(
      fmt::format("{} usage batches wait in the spool: the database cannot take them now{}",
                  spooled_, last.ok() ? "" : " (" + last.message() + ")"));
}

void UsageFlusher::report_host(bool at_start) {
  if (host_.name.empty() || (!at_start && host_.heartbeat_s == 0)) return;
  const int64_t at = now_();
  const policy::HostRow me{host_.name, started_at_, at, host_.backend,
                           host_.gpus ? host_.gpus() : "[]"};
  if (!at_start && me.gpus == reported_ && at - reported_at_ < host_.heartbeat_s) return;
  if (const Result r = ledger_->report_host(me); !r.ok()) {
    if (!report_failing_) {  // once, not at every flush of an outage
      spdlog::warn("vgpud: could not report this host to the database: {}", r.message());
    }
    report_failing_ = true;
    return;
  }
  report_failing_ = false;
  reported_ = me.gpus;
  reported_at_ = at;
}

void UsageFlusher::start() {
  {
    MutexLock one_at_a_time(flushing_);
    report_host(true);
    if (spool_) {
      // Batches kept by an earlier run wait in the spool; numbers go on from
      // the highest given, here or (its spool lost) in the store.
      int64_t store_seq = 0;
      (void)ledger_->last_host_batch(host_.name, &store_seq);
      if (const Result r = spool_->pending(&spooled_, &last_seq_); !r.ok()) {
        spdlog::error("vgpud: {}", r.message());
      }
      last_seq_ = std::max(last_seq_, store_seq);
      if (spooled_ > 0) spdlog::info("vgpud: {} usage batches wait in the spool", spooled_);
    }
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
  (void)flush();  // what it could not write waits in the spool for the next start
}

void UsageFlusher::seen(const std::string& vm) {
  MutexLock lock(mu_);
  seen_vms_.insert(vm);
}

Result UsageFlusher::flush() {
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
  Result written;
  if (spool_ && !host_.name.empty()) {
    written = write_spooled(std::move(batch));
  } else if (!batch.empty()) {
    written = ledger_->record_usage(batch);
    if (!written.ok()) {
      spdlog::error("vgpud: could not write {} usage records to the database", batch.size());
    }
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
  return written;
}

void UsageFlusher::run() {
  MutexLock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(mu_, interval_, [this]() REQUIRES(mu_) { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    (void)flush();  // what it could not write is retried at the next
    lock.lock();
  }
}

}  // namespace vgpu::host
