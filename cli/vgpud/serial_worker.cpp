#include "serial_worker.h"

namespace vgpu::daemon {

SerialWorker::SerialWorker() : thread_([this] { run(); }) {}

SerialWorker::~SerialWorker() { stop(); }

void SerialWorker::post(std::function<void()> task) {
  std::lock_guard lock(mu_);
  if (stopping_) return;
  queue_.push_back(std::move(task));
  posted_++;
  cv_.notify_all();
}

void SerialWorker::drain() {
  std::unique_lock lock(mu_);
  const uint64_t target = posted_;
  cv_.wait(lock, [&] { return done_ >= target; });  // the thread runs all before it ends
}

void SerialWorker::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void SerialWorker::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything ran
    auto task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    lock.lock();
    done_++;
    cv_.notify_all();
  }
}

}  // namespace vgpu::daemon
