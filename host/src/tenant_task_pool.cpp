#include "vgpu/host/tenant_task_pool.h"

#include <pthread.h>

namespace vgpu::host {

TenantTaskPool::TenantTaskPool(int threads) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "vgpu-calls");  // for top -H, perf, gdb
      run();
    });
  }
}

TenantTaskPool::~TenantTaskPool() { stop(); }

void TenantTaskPool::post(uint32_t tenant, std::function<void()> task) {
  std::lock_guard lock(mu_);
  if (stopping_) return;
  auto& queue = tasks_[tenant];
  queue.push_back(std::move(task));
  // A tenant joins the turns when its first task arrives and none of its
  // tasks runs; otherwise it rejoins when the running one ends.
  if (queue.size() == 1 && !running_.count(tenant)) {
    turns_.push_back(tenant);
    cv_.notify_one();
  }
}

void TenantTaskPool::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

size_t TenantTaskPool::queued() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [tenant, queue] : tasks_) n += queue.size();
  return n;
}

void TenantTaskPool::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return !turns_.empty() || (stopping_ && running_.empty()); });
    if (turns_.empty()) {  // stopping, nothing waits and nothing runs that could add some
      cv_.notify_all();
      return;
    }
    const uint32_t tenant = turns_.front();
    turns_.pop_front();
    auto& queue = tasks_[tenant];
    std::function<void()> task = std::move(queue.front());
    queue.pop_front();
    running_.insert(tenant);
    lock.unlock();
    task();
    task = nullptr;  // what it captured goes before the next task of the tenant starts
    lock.lock();
    running_.erase(tenant);
    auto it = tasks_.find(tenant);
    if (it->second.empty()) {
      tasks_.erase(it);
    } else {
      turns_.push_back(tenant);  // behind the tenants that waited meanwhile
    }
    cv_.notify_all();
  }
}

}  // namespace vgpu::host
