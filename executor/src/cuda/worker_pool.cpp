#include "worker_pool.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

namespace vgpu::executor::cuda {
namespace {
constexpr std::chrono::milliseconds kRetryAfter{1000};  // after a failed start, with nobody waiting
}

WorkerPool::WorkerPool(WorkerSpec spec, Reaper* reaper, size_t spares,
                       std::chrono::milliseconds start_limit)
    : spec_(std::move(spec)), reaper_(reaper), spares_(spares), start_limit_(start_limit) {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "vgpu-workers");  // for top -H, perf, gdb
    run();
  });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  ready_.clear();  // kills them
}

size_t WorkerPool::ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_.size();
}

Status WorkerPool::take(std::unique_ptr<WorkerProcess>* out, StartFailure* failure) {
  std::unique_lock<std::mutex> lock(mu_);
  ++waiting_;
  cv_.notify_all();
  // Only an attempt begun after this call arrived can fail it: one begun
  // earlier may have met conditions that no longer hold.
  const uint64_t first = attempts_ + 1;
  const bool got = cv_.wait_for(lock, start_limit_ + std::chrono::seconds(5), [&] {
    return stopping_ || !ready_.empty() || last_failed_ >= first;
  });
  --waiting_;
  if (!ready_.empty()) {
    *out = std::move(ready_.front());
    ready_.pop_front();
    cv_.notify_all();  // time to start the next spare
    return Status::kSuccess;
  }
  if (!got) {
    failure->status = Status::kInitializationError;
    failure->why = "no cuda worker started within " + std::to_string(start_limit_.count()) + " ms";
  } else if (stopping_) {
    failure->status = Status::kInitializationError;
    failure->why = "the cuda backend is shutting down";
  } else {
    *failure = last_failure_;
  }
  return failure->status;
}

void WorkerPool::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || ready_.size() < spares_ + waiting_; });
    if (stopping_) return;
    const uint64_t attempt = ++attempts_;
    lock.unlock();
    std::unique_ptr<WorkerProcess> w;
    StartFailure failure;
    const Status st = WorkerProcess::start(spec_, reaper_, start_limit_, &w, &failure);
    lock.lock();
    if (ok(st)) {
      ready_.push_back(std::move(w));
      cv_.notify_all();
      continue;
    }
    spdlog::error("cuda: cannot start a worker: {}", failure.why);
    last_failure_ = failure;
    last_failed_ = attempt;
    cv_.notify_all();
    // Nobody waiting: try again later rather than spin on a broken driver.
    cv_.wait_for(lock, kRetryAfter, [this] { return stopping_ || waiting_ > 0; });
  }
}

}  // namespace vgpu::executor::cuda
