// The dispatcher's batches: consecutive launches of one context, and what
// else the backend says it batches, reach the backend together
// (Backend::execute_batch), nothing else does, order holds, and what the
// backend did not run goes back to the front of the queue.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <catch2/catch.hpp>

#include "numbered_work.h"
#include "quiet_backend.h"
#include "vgpu/scheduler/dispatcher.h"
#include "vgpu/scheduler/round_robin.h"

using namespace vgpu;
using namespace vgpu::scheduler;
using namespace std::chrono_literals;

namespace {

using test::seq_of;

class BatchBackend final : public test::QuietBackend {
 public:
  BatchBackend() : QuietBackend("batch") {}
  std::mutex mu;
  std::vector<int> executed;               // sequence numbers, in execution order
  std::vector<std::vector<int>> handed;    // what each execute_batch call was handed
  std::atomic<size_t> run_at_most{1000};   // per batch: the rest "did not fit the budget"
  std::vector<uint64_t> budgets;           // the budget each execute_batch call was given
  std::vector<uint32_t> depths;            // and its depth
  uint32_t depth_limit = 1;                // max_batch_depth()
  bool batches_memsets = false;            // batches(): launches, and memsets too when set

  executor::ExecResult execute(const executor::Work& w) override {
    std::lock_guard lock(mu);
    executed.push_back(seq_of(w));
    return {Status::kSuccess, 1000};
  }
  size_t execute_batch(std::span<const executor::Work* const> works,
                       const executor::BatchLimits& limits,
                       executor::ExecResult* results) override {
    std::lock_guard lock(mu);
    budgets.push_back(limits.budget_ns);
    depths.push_back(limits.depth);
    handed.emplace_back();
    for (const executor::Work* w : works) handed.back().push_back(seq_of(*w));
    const size_t n = std::min(works.size(), run_at_most.load());
    for (size_t i = 0; i < n; ++i) {
      executed.push_back(seq_of(*works[i]));
      results[i] = {Status::kSuccess, 1000};
    }
    return n;
  }
  void discard(const executor::Work&) override {}
  uint32_t max_batch_depth() const override { return depth_limit; }
  bool batches(const executor::WorkOp& op) const override {
    return std::holds_alternative<executor::Launch>(op) ||
           (batches_memsets && std::holds_alternative<executor::Memset>(op));
  }
};

struct Harness {
  BatchBackend backend;
  UnlimitedGate gate;
  SteadyClock clock;
  std::mutex done_mu;
  std::condition_variable done_cv;
  int completions = 0;  // guarded by done_mu
  Dispatcher dispatcher;

  explicit Harness(size_t max_batch = 64)
      : dispatcher(&backend, std::make_unique<RoundRobinPolicy>(2 * kMillisecond), &gate, &clock,
                   DispatcherConfig{4096, 1, max_batch},
                   [this](const Command&, const executor::ExecResult&) {
                     std::lock_guard lock(done_mu);
                     ++completions;
                     done_cv.notify_all();
                   },
                   [] {}) {
    dispatcher.add_tenant(1, {});
  }
  // Waits until `n` commands in all have completed (the bound only ends a failing test).
  void wait_for(int n) {
    std::unique_lock lock(done_mu);
    REQUIRE(done_cv.wait_for(lock, 60s, [&] { return completions >= n; }));
    CHECK(completions == n);
  }
  void launch(executor::ContextId ctx, int seq, TenantId tenant = 1) {
    Command c;
    c.tenant = tenant;
    c.work.context = ctx;
    c.work.op = executor::Launch{7, {static_cast<uint32_t>(seq), 1, 1}, {1, 1, 1}, 0, {}};
    dispatcher.submit(std::move(c));
  }
  void memset(executor::ContextId ctx, int seq) {
    Command c;
    c.tenant = 1;
    c.work.context = ctx;
    c.work.op = executor::Memset{0, 1, static_cast<uint8_t>(seq)};
    dispatcher.submit(std::move(c));
  }
  void run_all(int n) {
    dispatcher.start();
    wait_for(n);
  }
};

std::vector<int> iota(int from, int to) {
  std::vector<int> v;
  for (int i = from; i < to; ++i) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("dispatcher batches: consecutive launches of a context go together, in order") {
  Harness h;
  for (int i = 0; i < 10; ++i) h.launch(5, i);  // queued before the dispatcher starts
  h.run_all(10);
  std::lock_guard lock(h.backend.mu);
  REQUIRE(h.backend.handed.size() == 1);
  CHECK(h.backend.handed[0] == iota(0, 10));
  CHECK(h.backend.executed == iota(0, 10));
}

TEST_CASE("dispatcher batches: other work and other contexts end a batch") {
  Harness h;
  h.launch(5, 0);
  h.launch(5, 1);
  h.memset(5, 2);
  h.launch(5, 3);
  h.launch(6, 4);  // another process of the same VM
  h.launch(6, 5);
  h.launch(5, 6);
  h.run_all(7);
  std::lock_guard lock(h.backend.mu);
  CHECK(h.backend.executed == iota(0, 7));
  REQUIRE(h.backend.handed.size() == 4);
  CHECK(h.backend.handed[0] == std::vector<int>{0, 1});
  CHECK(h.backend.handed[1] == std::vector<int>{3});
  CHECK(h.backend.handed[2] == std::vector<int>{4, 5});
  CHECK(h.backend.handed[3] == std::vector<int>{6});
}

TEST_CASE(
    "dispatcher batches: other work the backend batches goes with the launches; kernels are "
    "counted apart") {
  Harness h;
  h.backend.batches_memsets = true;
  h.launch(5, 0);
  h.memset(5, 1);
  h.launch(5, 2);
  h.memset(5, 3);
  h.memset(6, 4);  // another context ends the batch all the same
  h.run_all(5);
  {
    std::lock_guard lock(h.backend.mu);
    CHECK(h.backend.executed == iota(0, 5));
    REQUIRE(h.backend.handed.size() == 2);
    CHECK(h.backend.handed[0] == std::vector<int>{0, 1, 2, 3});
    CHECK(h.backend.handed[1] == std::vector<int>{4});
  }
  h.dispatcher.stop();  // a batch's usage is counted after its answers: stopped, all is counted
  const auto usage = h.dispatcher.usage(1);
  CHECK(usage.commands == 5);
  CHECK(usage.kernels == 2);
}

TEST_CASE("dispatcher batches: what the backend did not run goes first next time") {
  Harness h(4);
  h.backend.run_at_most = 3;
  for (int i = 0; i < 10; ++i) h.launch(5, i);
  h.memset(5, 10);
  h.run_all(11);
  std::lock_guard lock(h.backend.mu);
  CHECK(h.backend.executed == iota(0, 11));
  REQUIRE(h.backend.handed.size() == 4);
  CHECK(h.backend.handed[0] == std::vector<int>{0, 1, 2, 3});  // at most max_batch
  CHECK(h.backend.handed[1] == std::vector<int>{3, 4, 5, 6});  // 3 did not run: it leads
  CHECK(h.backend.handed[2] == std::vector<int>{6, 7, 8, 9});
  CHECK(h.backend.handed[3] == std::vector<int>{9});
}

TEST_CASE("dispatcher batches: max_batch 1 runs every launch on its own") {
  Harness h(1);
  for (int i = 0; i < 5; ++i) h.launch(5, i);
  h.run_all(5);
  std::lock_guard lock(h.backend.mu);
  CHECK(h.backend.handed.empty());
  CHECK(h.backend.executed == iota(0, 5));
}

TEST_CASE("dispatcher batches: cut short while a tenant may come back, whole otherwise") {
  // A tenant whose queue ran empty lately may submit again at any moment (a
  // program that synchronizes after a few kernels): batches of the others
  // stop after batch_step_ns of device time so its return is seen there.
  Harness h;
  h.dispatcher.add_tenant(2, {});
  SECTION("another tenant connected, never idle after work: whole slices") {
    for (int i = 0; i < 10; ++i) h.launch(5, i);
    h.run_all(10);
    std::lock_guard lock(h.backend.mu);
    REQUIRE(!h.backend.budgets.empty());
    CHECK(h.backend.budgets[0] == 2 * kMillisecond);
  }
  SECTION("another tenant ran and went idle: batches cut to the step") {
    h.launch(9, 100, 2);
    h.run_all(1);  // tenant 2's only launch ran: its queue is empty
    for (int i = 0; i < 10; ++i) h.launch(5, i);
    h.wait_for(11);
    std::lock_guard lock(h.backend.mu);
    REQUIRE(h.backend.budgets.size() >= 2);
    CHECK(h.backend.budgets.back() == static_cast<uint64_t>(DispatcherConfig{}.batch_step_ns));
  }
}

TEST_CASE("dispatcher batches: the overlap depth reaches the backend, up to what it can keep in flight") {
  Harness h;
  h.backend.depth_limit = 8;
  CHECK(h.dispatcher.effective_overlap_depth() == 1);  // the setting (default 1)
  h.dispatcher.set_overlap_depth(4);
  CHECK(h.dispatcher.effective_overlap_depth() == 4);
  h.dispatcher.set_overlap_depth(12);
  CHECK(h.dispatcher.effective_overlap_depth() == 8);  // the backend's limit
  for (int i = 0; i < 3; ++i) h.launch(5, i);
  h.run_all(3);
  std::lock_guard lock(h.backend.mu);
  REQUIRE(h.backend.depths.size() == 1);
  CHECK(h.backend.depths[0] == 8);
}
