// Several GPUs, a dispatcher each (DispatcherGroup): work goes to the GPU of
// its context, a tenant joins a GPU's dispatcher with its first work there,
// fair shares hold on each GPU among the tenants there, usage adds up, and a
// removed tenant is retired once every GPU it joined is done with it.
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>

#include <catch2/catch.hpp>

#include "quiet_backend.h"
#include "vgpu/scheduler/dispatcher_group.h"
#include "vgpu/scheduler/fair_policy.h"

using namespace vgpu;
using namespace vgpu::scheduler;
using namespace std::chrono_literals;

namespace {

// A count that callbacks raise on any thread, and a test waits for (woken
// by each raise, not by a clock).
class Counter {
 public:
  void add() {
    {
      std::lock_guard lock(mu_);
      ++n_;
    }
    cv_.notify_all();
  }
  int now() {
    std::lock_guard lock(mu_);
    return n_;
  }
  // True once the count is `n`; false if a minute passes first.
  bool reaches(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 60s, [&] { return n_ >= n; }) && n_ == n;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_ = 0;
};

// Runs nothing; each memset "takes" 100 us of device time. Records which
// context ran, in order.
class TimedBackend final : public test::QuietBackend {
 public:
  TimedBackend() : QuietBackend("timed") {}
  std::mutex mu;
  std::vector<executor::ContextId> executed;
  executor::ExecResult execute(const executor::Work& w) override {
    std::lock_guard lock(mu);
    executed.push_back(w.context);
    return {Status::kSuccess, 100'000};
  }
  std::vector<executor::ContextId> ran() {
    std::lock_guard lock(mu);
    return executed;
  }
};

// Contexts 1000 and up are on GPU 1, the rest on GPU 0.
size_t gpu_of(executor::ContextId c) { return c >= 1000 ? 1 : 0; }

struct TwoGpus {
  TimedBackend backend[2];
  UnlimitedGate gate;
  SteadyClock clock;
  Counter completed;
  std::unique_ptr<Dispatcher> d[2];
  std::unique_ptr<DispatcherGroup> group;

  TwoGpus() {
    for (int i = 0; i < 2; ++i) {
      d[i] = std::make_unique<Dispatcher>(
          &backend[i], std::make_unique<FairPolicy>(PolicyOptions{}), &gate, &clock,
          DispatcherConfig{},
          [this](const Command&, const executor::ExecResult&) { completed.add(); }, [] {});
    }
    group =
        std::make_unique<DispatcherGroup>(std::vector<Dispatcher*>{d[0].get(), d[1].get()}, gpu_of);
  }
  ~TwoGpus() { group->stop(); }

  void submit(TenantId tenant, executor::ContextId ctx, int n) {
    std::vector<Command> burst(static_cast<size_t>(n));
    for (Command& c : burst) {
      c.tenant = tenant;
      c.work.context = ctx;
      c.work.op = executor::Memset{0, 1, 0};
    }
    group->submit(tenant, burst);
  }
};

}  // namespace

TEST_CASE("group: work runs on its context's GPU, and a tenant joins a GPU with its first work") {
  TwoGpus g;
  g.group->add_tenant(1, {3, 0, 1});
  g.group->add_tenant(2, {1, 0, 1});
  CHECK(g.group->tenant_params(1)->weight == 3u);
  CHECK_FALSE(g.d[0]->tenant_params(1).has_value());  // no work anywhere yet
  CHECK_FALSE(g.d[1]->tenant_params(1).has_value());
  g.group->start();
  g.submit(1, 1001, 10);  // tenant 1 on GPU 1
  g.submit(2, 2, 5);      // tenant 2 on GPU 0
  REQUIRE(g.completed.reaches(15));
  CHECK(g.backend[1].ran() == std::vector<executor::ContextId>(10, 1001));
  CHECK(g.backend[0].ran() == std::vector<executor::ContextId>(5, 2));
  CHECK(g.d[1]->tenant_params(1)->weight == 3u);
  CHECK_FALSE(g.d[0]->tenant_params(1).has_value());
  CHECK_FALSE(g.d[1]->tenant_params(2).has_value());

  // A weight change reaches the GPU the tenant joined.
  g.group->update_tenant(1, {7, 0, 1});
  CHECK(g.d[1]->tenant_params(1)->weight == 7u);
  CHECK(g.group->tenant_params(1)->weight == 7u);

  // Usage is the sum over GPUs: tenant 2 moves to GPU 1 (a new context).
  g.submit(2, 1002, 4);
  REQUIRE(g.completed.reaches(19));
  CHECK(g.group->usage(2).commands == 9);
  CHECK(g.group->usage(2).gpu_ns == 9 * 100'000u);
  CHECK(g.group->usage_all().at(1).commands == 10);
}

TEST_CASE("group: a tenant placed on another GPU leaves the old one's policy, its usage kept") {
  TwoGpus g;
  g.group->add_tenant(1, {2, 0, 1});
  g.group->start();
  g.submit(1, 1, 5);  // on GPU 0
  REQUIRE(g.completed.reaches(5));
  CHECK(g.d[0]->tenant_params(1).has_value());
  // Its contexts gone, it is placed on GPU 1: GPU 0's policy no longer counts it.
  g.group->placed(1, 1);
  CHECK_FALSE(g.d[0]->tenant_params(1).has_value());
  g.submit(1, 1001, 3);
  REQUIRE(g.completed.reaches(8));
  CHECK(g.d[1]->tenant_params(1)->weight == 2u);
  CHECK(g.group->usage(1).commands == 8);  // what it ran on GPU 0 still counts
  // Back on GPU 0 later: it joins again with its first work there.
  g.group->placed(1, 0);
  CHECK_FALSE(g.d[1]->tenant_params(1).has_value());
  g.submit(1, 2, 2);
  REQUIRE(g.completed.reaches(10));
  CHECK(g.d[0]->tenant_params(1)->weight == 2u);
  CHECK(g.group->usage(1).commands == 10);
  // Placed where it already is: nothing changes.
  g.group->placed(1, 0);
  CHECK(g.d[0]->tenant_params(1).has_value());
}

TEST_CASE("group: fair shares hold on each GPU among the tenants placed there") {
  TwoGpus g;
  g.group->add_tenant(1, {1, 0, 1});
  g.group->add_tenant(2, {3, 0, 1});
  g.group->add_tenant(3, {1, 0, 1});
  g.group->add_tenant(4, {1, 0, 1});
  // Everything is queued before the GPUs start, so every tenant is
  // backlogged from the first turn on.
  for (TenantId t : {1u, 2u}) g.submit(t, t, 3000);
  for (TenantId t : {3u, 4u}) g.submit(t, 1000 + t, 3000);
  g.group->start();
  REQUIRE(g.completed.reaches(12000));
  // The first 2000 commands of each GPU, while all its tenants had work.
  auto share = [](const std::vector<executor::ContextId>& ran, executor::ContextId ctx) {
    size_t n = 0;
    for (size_t i = 0; i < 2000; ++i) n += ran[i] == ctx;
    return double(n) / 2000;
  };
  const auto gpu0 = g.backend[0].ran();
  const auto gpu1 = g.backend[1].ran();
  // GPU 0: weights 1 and 3; GPU 1: 1 and 1. Within 5% of the entitlement.
  CHECK(share(gpu0, 2) == Approx(0.75).epsilon(0.05));
  CHECK(share(gpu0, 1) == Approx(0.25).epsilon(0.05));
  CHECK(share(gpu1, 1003) == Approx(0.5).epsilon(0.05));
  CHECK(share(gpu1, 1004) == Approx(0.5).epsilon(0.05));
}

TEST_CASE("group: a removed tenant leaves every GPU it joined, and is retired once") {
  TwoGpus g;
  g.group->add_tenant(1, {});
  g.group->start();
  g.submit(1, 1, 3);
  g.submit(1, 1001, 3);
  REQUIRE(g.completed.reaches(6));
  Counter retired;
  g.group->remove_tenant(1, [&] { retired.add(); });
  REQUIRE(retired.reaches(1));
  CHECK_FALSE(g.d[0]->tenant_params(1).has_value());
  CHECK_FALSE(g.d[1]->tenant_params(1).has_value());
  CHECK_FALSE(g.group->tenant_params(1).has_value());
  // A tenant that never ran is retired at once.
  g.group->add_tenant(2, {});
  g.group->remove_tenant(2, [&] { retired.add(); });
  CHECK(retired.now() == 2);
}

TEST_CASE("group: with one GPU the tenant is added to its dispatcher at once") {
  TimedBackend backend;
  UnlimitedGate gate;
  SteadyClock clock;
  Dispatcher d(
      &backend, std::make_unique<FairPolicy>(PolicyOptions{}), &gate, &clock, DispatcherConfig{},
      [](const Command&, const executor::ExecResult&) {}, [] {});
  DispatcherGroup group({&d}, {});
  group.add_tenant(5, {2, 0, 1});
  CHECK(d.tenant_params(5)->weight == 2u);
  group.remove_tenant(5);
  CHECK_FALSE(d.tenant_params(5).has_value());
}
