#include "vgpu/host/lease_keeper.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <chrono>

namespace vgpu::host {

LeaseKeeper::LeaseKeeper(policy::Store* store, policy::Accounting* accounting, std::string host,
                         policy::LeaseRules rules, std::function<void()> granted)
    : store_(store),
      accounting_(accounting),
      host_(std::move(host)),
      rules_(rules),
      granted_(std::move(granted)) {}

LeaseKeeper::~LeaseKeeper() { stop(); }

void LeaseKeeper::start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "vgpu-leases");
    run();
  });
}

void LeaseKeeper::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (!stopped_) round(true);
  stopped_ = true;
}

void LeaseKeeper::wake() {
  MutexLock lock(mu_);
  woken_ = true;
  cv_.notify_one();
}

void LeaseKeeper::round(bool all_back) {
  bool brought = false;
  for (const policy::LeaseNeed& need : accounting_->lease_needs(rules_, all_back)) {
    policy::LeaseRequest request = need.request;
    request.host = host_;
    policy::LeaseGrant grant;
    const Result r = store_->lease_budget(request, rules_, &grant);
    if (!r.ok()) {
      // The host spends what it holds and asks again after the retry time.
      if (!failing_) {
        spdlog::warn(
            "vgpud: cannot lease GPU time from the database ({}); spending the leases "
            "held, asking again every {} s",
            r.message(), rules_.retry_s);
      }
      failing_ = true;
      accounting_->lease_answer(need, nullptr, rules_);
      continue;
    }
    if (failing_) spdlog::info("vgpud: leasing GPU time from the database again");
    failing_ = false;
    accounting_->lease_answer(need, &grant, rules_);
    // Only time to spend wakes the dispatcher (not a grant of nothing).
    brought = brought || (!request.give_back && grant.limit_ns > grant.used_ns);
  }
  if (brought && granted_) granted_();
}

void LeaseKeeper::run() {
  for (;;) {
    {
      MutexLock lock(mu_);
      cv_.wait_for(mu_, std::chrono::milliseconds(250),
                   [this]() REQUIRES(mu_) { return woken_ || stopping_; });
      if (stopping_) return;
      woken_ = false;
    }
    round();
  }
}

}  // namespace vgpu::host
