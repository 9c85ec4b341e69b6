// The dispatcher with a backend that records what it was asked to run.
#include <atomic>
#include <mutex>
#include <thread>

#include <catch2/catch.hpp>

#include "quiet_backend.h"
#include "vgpu/scheduler/dispatcher.h"
#include "vgpu/scheduler/fair_policy.h"
#include "vgpu/scheduler/round_robin.h"

using namespace vgpu;
using namespace vgpu::scheduler;
using namespace std::chrono_literals;

namespace {

// Runs nothing; records the order of executed and discarded work (by the
// Memset value, used as a sequence number) and can be made slow.
class RecordingBackend final : public test::QuietBackend {
 public:
  RecordingBackend() : QuietBackend("recording") {}
  std::mutex mu;
  std::vector<std::pair<executor::ContextId, int>> executed;
  std::vector<int> discarded;
  std::atomic<int> delay_us{0};
  std::atomic<bool> hold{false};     // execute() waits while set
  std::atomic<bool> entered{false};  // execute() was called

  executor::ExecResult execute(const executor::Work& w) override {
    entered = true;
    while (hold) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (delay_us) std::this_thread::sleep_for(std::chrono::microseconds(delay_us.load()));
    std::lock_guard lock(mu);
    executed.emplace_back(w.context, std::get<executor::Memset>(w.op).value);
    // Report the time it took, as a real backend measures it.
    return {Status::kSuccess, delay_us ? static_cast<uint64_t>(delay_us) * 1000 : 1000};
  }
  void discard(const executor::Work& w) override {
    std::lock_guard lock(mu);
    discarded.push_back(std::get<executor::Memset>(w.op).value);
  }
};

// A gate whose answer the test sets.
class ScriptedGate final : public QuotaGate {
 public:
  std::atomic<Grant::Kind> answer{Grant::Kind::kRun};
  std::atomic<int> asked{0};  // reserve calls so far: the dispatcher reached a decision
  Grant reserve(TenantId, Nanos want) override {
    const Grant::Kind kind = answer.load();
    asked.fetch_add(1);
    return {kind, want, kind == Grant::Kind::kReject ? Status::kDevicesUnavailable : Status::kSuccess};
  }
  void settle(TenantId, Nanos, Nanos) override {}
};

struct Harness {
  RecordingBackend backend;
  ScriptedGate gate;
  SteadyClock clock;
  std::mutex mu;
  std::vector<std::pair<int, Status>> completed;  // (seq, status)
  std::atomic<int> rooms{0};
  Dispatcher dispatcher;

  explicit Harness(size_t max_queued = 4096,
                   std::unique_ptr<SchedulingPolicy> policy = std::make_unique<RoundRobinPolicy>(2 * kMillisecond))
      : dispatcher(&backend, std::move(policy), &gate, &clock, DispatcherConfig{max_queued, 1},
                   [this](const Command& c, const executor::ExecResult& r) {
                     std::lock_guard lock(mu);
                     completed.emplace_back(std::get<executor::Memset>(c.work.op).value, r.status);
                   },
                   [this] { rooms++; }) {}

  void submit(TenantId t, executor::ContextId ctx, int seq) {
    Command c;
    c.tenant = t;
    c.work.context = ctx;
    c.work.op = executor::Memset{0, 1, static_cast<uint8_t>(0)};
    std::get<executor::Memset>(c.work.op).value = static_cast<uint8_t>(seq);
    // value is a byte; tests keep seq < 256
    dispatcher.submit(std::move(c));
  }
  size_t completions() {
    std::lock_guard lock(mu);
    return completed.size();
  }
};

template <class F>
bool eventually(F f) {
  for (int i = 0; i < 5000; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return f();
}

}  // namespace

TEST_CASE("a tenant's commands run in the order they were submitted") {
  Harness h;
  h.dispatcher.add_tenant(1, {});
  h.dispatcher.start();
  for (int i = 0; i < 200; ++i) h.submit(1, 10, i);
  REQUIRE(eventually([&] { return h.completions() == 200; }));
  std::lock_guard lock(h.backend.mu);
  for (int i = 0; i < 200; ++i) CHECK(h.backend.executed[static_cast<size_t>(i)].second == i);
}

TEST_CASE("a burst submitted at once runs in order, interleaved with single submits") {
  Harness h;
  h.dispatcher.add_tenant(1, {});
  h.dispatcher.start();
  int seq = 0;
  for (int round = 0; round < 20; ++round) {
    std::vector<Command> burst;
    for (int i = 0; i < 9; ++i) {
      Command c;
      c.tenant = 1;
      c.work.context = 10;
      c.work.op = executor::Memset{0, 1, static_cast<uint8_t>(seq++)};
      burst.push_back(std::move(c));
    }
    h.dispatcher.submit(1, burst);
    h.submit(1, 10, seq++);
  }
  REQUIRE(eventually([&] { return h.completions() == 200; }));
  std::lock_guard lock(h.backend.mu);
  for (int i = 0; i < 200; ++i) CHECK(h.backend.executed[static_cast<size_t>(i)].second == i);
  CHECK(h.dispatcher.usage(1).queued == 0);
}

TEST_CASE("a burst for an unknown tenant is answered command by command, none run") {
  Harness h;
  h.dispatcher.start();
  std::vector<Command> burst(3);
  for (int i = 0; i < 3; ++i) {
    burst[i].tenant = 42;
    burst[i].work.op = executor::Memset{0, 1, static_cast<uint8_t>(i)};
  }
  h.dispatcher.submit(42, burst);
  REQUIRE(h.completions() == 3);  // answered at once, on the caller's thread
  std::lock_guard lock(h.mu);
  for (const auto& [seq, status] : h.completed) CHECK(status == Status::kDevicesUnavailable);
  CHECK(h.backend.executed.empty());
  CHECK(h.backend.discarded.size() == 3);
}

TEST_CASE("two busy tenants share the device, one slice each in turn") {
  Harness h;
  h.backend.delay_us = 200;
  h.dispatcher.add_tenant(1, {});
  h.dispatcher.add_tenant(2, {});
  for (int i = 0; i < 100; ++i) {
    h.submit(1, 10, i);
    h.submit(2, 20, i);
  }
  h.dispatcher.start();
  REQUIRE(eventually([&] { return h.completions() == 200; }));
  // In the first half of the run both tenants made progress.
  std::lock_guard lock(h.backend.mu);
  int first_half_tenant1 = 0;
  for (size_t i = 0; i < 100; ++i) first_half_tenant1 += h.backend.executed[i].first == 10;
  CHECK(first_half_tenant1 > 25);
  CHECK(first_half_tenant1 < 75);
}

TEST_CASE("purging a context drops its queued commands without running them") {
  Harness h;
  h.backend.delay_us = 2000;
  h.dispatcher.add_tenant(1, {});
  h.dispatcher.start();
  for (int i = 0; i < 50; ++i) h.submit(1, 10, i);
  for (int i = 50; i < 60; ++i) h.submit(1, 11, i);  // another process of the same VM
  std::this_thread::sleep_for(5ms);
  std::atomic<bool> retired{false};
  h.dispatcher.purge_context(1, 10, [&] { retired = true; });
  REQUIRE(eventually([&] { return retired.load(); }));
  REQUIRE(eventually([&] {
    std::lock_guard lock(h.backend.mu);
    return h.backend.executed.size() + h.backend.discarded.size() == 60;
  }));
  std::lock_guard lock(h.backend.mu);
  bool context11_all_ran = true;
  for (int i = 50; i < 60; ++i) {
    bool ran = false;
    for (auto& [ctx, seq] : h.backend.executed) ran |= (ctx == 11 && seq == i);
    context11_all_ran &= ran;
  }
  CHECK(context11_all_ran);
  CHECK_FALSE(h.backend.discarded.empty());
  // Nothing of context 10 started after the purge: every executed one
  // precedes every discarded one.
  for (int d : h.backend.discarded) {
    for (auto& [ctx, seq] : h.backend.executed) {
      if (ctx == 10) CHECK(seq < d);
    }
  }
}

TEST_CASE("a full queue stops accepting, and says when it has room again") {
  Harness h(8);
  h.backend.delay_us = 1000;
  h.dispatcher.add_tenant(1, {});
  for (int i = 0; i < 8; ++i) h.submit(1, 10, i);
  CHECK_FALSE(h.dispatcher.accepting(1));
  h.dispatcher.start();
  REQUIRE(eventually([&] { return h.rooms.load() > 0; }));
  CHECK(h.dispatcher.accepting(1));
}

TEST_CASE("the quota gate can hold a tenant back, and reject its work") {
  Harness h;
  h.dispatcher.add_tenant(1, {});
  h.gate.answer = Grant::Kind::kWait;
  h.dispatcher.start();
  for (int i = 0; i < 5; ++i) h.submit(1, 10, i);
  // The dispatcher asked the gate about the tenant and was told to wait:
  // nothing of it ran, or will until it asks again.
  REQUIRE(eventually([&] { return h.gate.asked.load() > 0; }));
  CHECK(h.completions() == 0);
  h.gate.answer = Grant::Kind::kRun;
  h.dispatcher.poke();
  REQUIRE(eventually([&] { return h.completions() == 5; }));

  h.gate.answer = Grant::Kind::kReject;
  for (int i = 5; i < 10; ++i) h.submit(1, 10, i);
  REQUIRE(eventually([&] { return h.completions() == 10; }));
  std::lock_guard lock(h.mu);
  for (size_t i = 5; i < 10; ++i) CHECK(h.completed[i].second == Status::kDevicesUnavailable);
}

TEST_CASE("work for an unknown tenant is answered with an error, not lost") {
  Harness h;
  h.dispatcher.start();
  h.submit(42, 1, 7);
  REQUIRE(h.completions() == 1);
  CHECK(h.completed[0].second == Status::kDevicesUnavailable);
  CHECK(h.backend.discarded.size() == 1);
}


TEST_CASE("a purge never waits; what it ended is retired when its running command ends") {
  // The transport thread purges when a program ends: it must wait neither for
  // the turn of whoever holds the device, nor for a long kernel of the
  // program's own (either stalled every VM).
  Harness h;
  h.dispatcher.add_tenant(1, {});
  h.dispatcher.add_tenant(2, {});
  h.dispatcher.start();
  h.backend.hold = true;
  h.submit(1, 10, 0);  // runs, and is held running
  REQUIRE(eventually([&] { return h.backend.entered.load(); }));
  h.submit(2, 20, 1);
  h.submit(1, 10, 2);

  // Another tenant's context and the tenant itself: nothing of theirs runs,
  // so both are retired at once, on this thread.
  const auto caller = std::this_thread::get_id();
  std::thread::id other_context, other_tenant;
  h.dispatcher.purge_context(2, 20, [&] { other_context = std::this_thread::get_id(); });
  h.dispatcher.remove_tenant(2, [&] { other_tenant = std::this_thread::get_id(); });
  CHECK(other_context == caller);
  CHECK(other_tenant == caller);

  // The held context: the purge returns at once, its callback waits for the
  // command, and runs on the dispatcher thread when it ends.
  std::atomic<bool> own_retired{false};
  std::thread::id own_thread;
  h.dispatcher.purge_context(1, 10, [&] {
    own_thread = std::this_thread::get_id();
    own_retired = true;
  });
  std::atomic<bool> tenant_retired{false};
  h.dispatcher.remove_tenant(1, [&] { tenant_retired = true; });
  // Not retired by the calls themselves, and the dispatcher thread, the only
  // other that retires, is inside the held command.
  CHECK_FALSE(own_retired.load());  // its command still runs
  CHECK_FALSE(tenant_retired.load());
  h.backend.hold = false;
  REQUIRE(eventually([&] { return own_retired.load() && tenant_retired.load(); }));
  CHECK(own_thread != caller);

  // The held command finished without an answer (its context was purged
  // while it ran); the purged ones never ran, and answer nothing either.
  REQUIRE(eventually([&] {
    std::lock_guard lock(h.backend.mu);
    return h.backend.discarded.size() == 2;
  }));
  h.dispatcher.stop();  // its thread joined: whatever it would have answered, it has
  CHECK(h.completions() == 0);
  std::lock_guard lock(h.backend.mu);
  REQUIRE(h.backend.executed.size() == 1);
  CHECK(h.backend.executed[0].second == 0);
}

TEST_CASE("a purge racing the end of its context's command is retired exactly once") {
  // The callback is left for the command's end only while the command is
  // seen running; at its end it may be taken by either side, never both
  // and never neither.
  Harness h;
  h.backend.delay_us = 50;
  h.dispatcher.add_tenant(1, {});
  h.dispatcher.start();
  std::atomic<int> retired{0};
  constexpr int kRounds = 200;
  for (int i = 0; i < kRounds; ++i) {
    const executor::ContextId context = 100 + static_cast<executor::ContextId>(i);
    for (int k = 0; k < 3; ++k) h.submit(1, context, (i * 3 + k) % 250);
    std::this_thread::sleep_for(std::chrono::microseconds(i % 7 * 40));
    h.dispatcher.purge_context(1, context, [&] { retired++; });
  }
  REQUIRE(eventually([&] { return retired.load() == kRounds; }));
  std::this_thread::sleep_for(20ms);
  CHECK(retired.load() == kRounds);
}

TEST_CASE("submit and accepting follow a tenant that is removed and added again") {
  // They look tenants up in the submitting thread's own view, which must
  // notice every add and remove, not only the first.
  Harness h(4);
  h.dispatcher.start();
  h.dispatcher.add_tenant(1, {});
  h.submit(1, 10, 0);
  REQUIRE(eventually([&] { return h.completions() == 1; }));
  h.dispatcher.remove_tenant(1);
  h.submit(1, 10, 1);  // gone: answered with an error, not queued for nobody
  REQUIRE(h.completions() == 2);
  CHECK(h.completed[1].second == Status::kDevicesUnavailable);
  CHECK(h.dispatcher.accepting(1));  // unknown: submit answers

  h.dispatcher.add_tenant(1, {});
  h.gate.answer = Grant::Kind::kWait;  // the new tenant's queue fills, and stays full
  for (int i = 2; i < 7; ++i) h.submit(1, 10, i);
  CHECK_FALSE(h.dispatcher.accepting(1));
  h.gate.answer = Grant::Kind::kRun;
  h.dispatcher.poke();
  REQUIRE(eventually([&] { return h.completions() == 7; }));
  std::lock_guard lock(h.mu);
  for (size_t i = 2; i < 7; ++i) CHECK(h.completed[i].second == Status::kSuccess);
}
TEST_CASE("usage is measured per tenant") {
  Harness h;
  h.dispatcher.add_tenant(1, {});
  h.dispatcher.add_tenant(2, {});
  h.dispatcher.start();
  for (int i = 0; i < 10; ++i) h.submit(1, 10, i);
  for (int i = 0; i < 4; ++i) h.submit(2, 20, i);
  REQUIRE(eventually([&] { return h.completions() == 14; }));
  CHECK(h.dispatcher.usage(1).commands == 10);
  CHECK(h.dispatcher.usage(1).gpu_ns == 10 * 1000);
  CHECK(h.dispatcher.usage(2).commands == 4);
}

namespace {

// How many of the first `n` executed commands were tenant `ctx`'s (tenants
// are told apart by context id in these tests).
int share_of_first(Harness& h, size_t n, executor::ContextId ctx) {
  std::lock_guard lock(h.backend.mu);
  int count = 0;
  for (size_t i = 0; i < n && i < h.backend.executed.size(); ++i) count += h.backend.executed[i].first == ctx;
  return count;
}

}  // namespace

TEST_CASE("the policy can be switched live, and the new one knows every tenant") {
  Harness h;
  h.backend.delay_us = 100;
  h.dispatcher.add_tenant(1, {3, 0, 1});
  h.dispatcher.add_tenant(2, {1, 0, 1});
  REQUIRE(h.dispatcher.configure_policy("fair", PolicyOptions{kMillisecond}).ok());
  CHECK(h.dispatcher.policy_name() == "fair");
  for (int i = 0; i < 200; ++i) {
    h.submit(1, 10, i % 250);
    h.submit(2, 20, i % 250);
  }
  h.dispatcher.start();
  REQUIRE(eventually([&] { return h.completions() == 400; }));
  // Weights 3:1 under fair (round robin would give 1:1): of the first 200
  // commands, about 150 were tenant 1's.
  const int first = share_of_first(h, 200, 10);
  CHECK(first > 130);
  CHECK(first < 170);
}

TEST_CASE("a bad policy change is refused and changes nothing") {
  Harness h;
  const Result name = h.dispatcher.configure_policy("lottery", PolicyOptions{});
  CHECK(name.is(Result::Code::kInvalidArgument));
  CHECK_FALSE(name.message().empty());
  CHECK(h.dispatcher.configure_policy("fair", PolicyOptions{kSecond})
            .is(Result::Code::kInvalidArgument));
  CHECK(h.dispatcher.policy_name() == "best-effort");
  // Same policy, new options: kept (and still runs work).
  REQUIRE(h.dispatcher.configure_policy("best-effort", PolicyOptions{kMillisecond}).ok());
  h.dispatcher.add_tenant(1, {});
  h.dispatcher.start();
  h.submit(1, 10, 1);
  REQUIRE(eventually([&] { return h.completions() == 1; }));
}

TEST_CASE("a weight updated while queued changes the tenant's share") {
  Harness h(4096, std::make_unique<FairPolicy>(PolicyOptions{kMillisecond}));
  h.backend.delay_us = 100;
  h.dispatcher.add_tenant(1, {1, 5, 2});
  h.dispatcher.add_tenant(2, {1, 5, 2});
  h.dispatcher.update_tenant(1, {3, 5, 4});  // e.g. the quota control's word
  CHECK(h.dispatcher.tenant_params(1)->weight == 3);
  CHECK(h.dispatcher.tenant_params(1)->group_weight == 4);
  for (int i = 0; i < 200; ++i) {
    h.submit(1, 10, i % 250);
    h.submit(2, 20, i % 250);
  }
  h.dispatcher.start();
  REQUIRE(eventually([&] { return h.completions() == 400; }));
  const int first = share_of_first(h, 200, 10);
  CHECK(first > 130);
  CHECK(first < 170);
  CHECK_FALSE(h.dispatcher.tenant_params(7).has_value());
}

TEST_CASE("usage outlives the tenant, so a flush after it left loses nothing") {
  Harness h;
  h.dispatcher.add_tenant(1, {});
  h.dispatcher.start();
  for (int i = 0; i < 5; ++i) h.submit(1, 10, i);
  REQUIRE(eventually([&] { return h.completions() == 5; }));
  h.dispatcher.remove_tenant(1);
  CHECK(h.dispatcher.usage(1).commands == 5);
  CHECK(h.dispatcher.usage_all().at(1).commands == 5);
  h.dispatcher.add_tenant(1, {});  // it comes back: its counters go on
  for (int i = 0; i < 2; ++i) h.submit(1, 10, i);
  REQUIRE(eventually([&] { return h.completions() == 7; }));
  CHECK(h.dispatcher.usage(1).commands == 7);
}

TEST_CASE("the overlap depth is a setting; synchronous backends run at depth 1") {
  Harness h;
  CHECK(h.dispatcher.overlap_depth() == 1);
  h.dispatcher.set_overlap_depth(4);
  CHECK(h.dispatcher.overlap_depth() == 4);
  h.dispatcher.set_overlap_depth(1000);
  CHECK(h.dispatcher.overlap_depth() == kMaxOverlapDepth);
  CHECK(h.dispatcher.effective_overlap_depth() == 1);
}

TEST_CASE("under fair, a tenant that wakes up does not wait out another's whole slice") {
  // Tenant 1 floods 50 us commands (slices of 20 ms hold 400 of them); tenant
  // 2 submits one command mid-flood. It runs within a few commands.
  Harness h(4096, std::make_unique<FairPolicy>(PolicyOptions{20 * kMillisecond}));
  h.backend.delay_us = 50;
  h.dispatcher.add_tenant(1, {});
  h.dispatcher.add_tenant(2, {});
  for (int i = 0; i < 2000; ++i) h.submit(1, 10, i % 200);
  h.dispatcher.start();
  REQUIRE(eventually([&] { return h.completions() > 100; }));
  size_t at_submit;
  {
    std::lock_guard lock(h.backend.mu);
    at_submit = h.backend.executed.size();
  }
  h.submit(2, 20, 7);
  REQUIRE(eventually([&] { return h.completions() == 2001; }));
  std::lock_guard lock(h.backend.mu);
  size_t ran_at = 0;
  for (size_t i = 0; i < h.backend.executed.size(); ++i) {
    if (h.backend.executed[i].first == 20) ran_at = i;
  }
  CHECK(ran_at - at_submit < 20);
}

TEST_CASE("work submitted right after its tenant is added is never lost, even mid-turn") {
  // The dispatcher notes new work between the commands of a turn, possibly
  // before the control op that adds the tenant reaches the policy.
  Harness h(4096, std::make_unique<FairPolicy>(PolicyOptions{20 * kMillisecond}));
  h.backend.delay_us = 20;
  h.dispatcher.add_tenant(1, {});
  for (int i = 0; i < 3000; ++i) h.submit(1, 10, i % 200);
  h.dispatcher.start();
  REQUIRE(eventually([&] { return h.completions() > 50; }));
  for (TenantId t = 2; t < 40; ++t) {
    h.dispatcher.add_tenant(t, {});
    h.submit(t, 100 + t, 1);
  }
  REQUIRE(eventually([&] { return h.completions() == 3000 + 38; }));
}
