// TenantTaskPool: one tenant's tasks run one at a time, in the order posted;
// a tenant whose task is stuck holds up no other tenant while a thread is
// free; tenants waiting take turns; stop() runs what is posted.
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <vector>

#include <catch2/catch.hpp>

#include "vgpu/host/tenant_task_pool.h"

using namespace vgpu::host;
using namespace std::chrono_literals;

TEST_CASE("a tenant's tasks run one at a time, in order; stop runs what is posted") {
  TenantTaskPool pool(4);
  std::mutex mu;
  std::vector<int> ran;
  std::atomic<int> running{0}, overlapped{0};
  for (int i = 0; i < 200; ++i) {
    pool.post(7, [&, i] {
      if (running.fetch_add(1) != 0) overlapped++;
      {
        std::lock_guard lock(mu);
        ran.push_back(i);
      }
      running.fetch_sub(1);
    });
  }
  pool.stop();
  pool.post(7, [&] { ran.push_back(-1); });  // after stop: dropped
  REQUIRE(ran.size() == 200);
  for (int i = 0; i < 200; ++i) CHECK(ran[i] == i);
  CHECK(overlapped == 0);
  CHECK(pool.queued() == 0);
}

TEST_CASE("a tenant whose task is stuck holds up no other tenant, and waiting tenants take turns") {
  TenantTaskPool pool(2);
  std::promise<void> release_a;
  std::shared_future<void> a_released = release_a.get_future().share();
  std::promise<void> a_started;
  pool.post(1, [&] {
    a_started.set_value();
    a_released.wait();  // a module that takes long to parse
  });
  std::atomic<int> a_more{0};
  for (int i = 0; i < 10; ++i) pool.post(1, [&] { a_more++; });
  REQUIRE(a_started.get_future().wait_for(60s) == std::future_status::ready);

  // Tenant 2's tasks all run on the other thread meanwhile; tenant 1's queue waits.
  std::promise<void> b_done;
  std::atomic<int> b_ran{0};
  for (int i = 0; i < 20; ++i) {
    pool.post(2, [&, i] {
      if (++b_ran == 20) b_done.set_value();
    });
  }
  REQUIRE(b_done.get_future().wait_for(60s) == std::future_status::ready);
  CHECK(a_more == 0);
  CHECK(pool.queued() == 10);

  release_a.set_value();
  pool.stop();
  CHECK(a_more == 10);
}

TEST_CASE("tenants with tasks waiting take turns, one task each") {
  TenantTaskPool pool(1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  pool.post(9, [&] { released.wait(); });  // the one thread is busy while the others post
  std::mutex mu;
  std::vector<uint32_t> order;
  for (int i = 0; i < 3; ++i) {
    for (uint32_t tenant : {1u, 2u, 3u}) {
      pool.post(tenant, [&, tenant] {
        std::lock_guard lock(mu);
        order.push_back(tenant);
      });
    }
  }
  release.set_value();
  pool.stop();
  REQUIRE(order.size() == 9);
  for (size_t i = 0; i < order.size(); ++i) CHECK(order[i] == 1 + i % 3);
}
