// Threads that run tasks posted on behalf of tenants (VMs): a tenant's tasks
// run one at a time, in the order posted; tenants with tasks waiting take
// turns. So a VM that posts slow work (a large module to parse, a call that
// waits on its worker) keeps at most one thread busy, and the others' tasks
// start as soon as a thread is free.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace vgpu::host {

class TenantTaskPool {
 public:
  explicit TenantTaskPool(int threads);
  ~TenantTaskPool();  // stop()
  TenantTaskPool(const TenantTaskPool&) = delete;
  TenantTaskPool& operator=(const TenantTaskPool&) = delete;

  // Any thread; dropped after stop().
  void post(uint32_t tenant, std::function<void()> task);
  // Runs what is posted, then ends the threads.
  void stop();

  size_t queued() const;  // tasks posted and not started

 private:
  void run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<uint32_t, std::deque<std::function<void()>>> tasks_;  // guarded by mu_
  std::deque<uint32_t> turns_;             // tenants with tasks and none running, in turn order
  std::unordered_set<uint32_t> running_;   // tenants with a task running now
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace vgpu::host
