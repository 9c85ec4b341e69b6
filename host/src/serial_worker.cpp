#include "vgpu/host/serial_worker.h"

#include <future>

namespace vgpu::host {

SerialWorker::SerialWorker() : thread_([this] { run(); }) {}

SerialWorker::~SerialWorker() { stop(); }

void SerialWorker::post(std::function<void()> task) {
  std::lock_guard lock(mu_);
  if (stopping_) return;
  queue_.push_back(std::move(task));
  cv_.notify_one();
}

void SerialWorker::drain() {
  std::promise<void> ran;
  std::future<void> done = ran.get_future();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;  // stop() runs what was queued before it returns
    queue_.push_back([&ran] { ran.set_value(); });
    cv_.notify_one();
  }
  done.wait();
}

void SerialWorker::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_one();
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
  }
}

}  // namespace vgpu::host
