// The dispatcher with a backend that records what it was asked to run.
#include <atomic>
#include <mutex>
#include <thread>

#include <catch2/catch.hpp>

#include "vgpu/scheduler/dispatcher.h"
#include "vgpu/scheduler/round_robin.h"

using namespace vgpu;
using namespace vgpu::scheduler;
using namespace std::chrono_literals;

namespace {

// Runs nothing; records the order of executed and discarded work (by the
// Memset value, used as a sequence number) and can be made slow.
class RecordingBackend final : public executor::Backend {
 public:
  std::mutex mu;
  std::vector<std::pair<executor::ContextId, int>> executed;
  std::vector<int> discarded;
  std::atomic<int> delay_us{0};

  std::string_view name() const override { return "recording"; }
  const executor::DeviceInfo& device() const override { return info_; }
  Status create_context(executor::TenantId, executor::ContextId*) override { return Status::kSuccess; }
  void destroy_context(executor::ContextId) override {}
  void set_memory_cap(executor::TenantId, uint64_t) override {}
  executor::TenantMemory tenant_memory(executor::TenantId) const override { return {}; }
  Status mem_alloc(executor::ContextId, uint64_t, uint64_t*) override { return Status::kSuccess; }
  Status mem_info(executor::ContextId, uint64_t*, uint64_t*) override { return Status::kSuccess; }
  Status stream_create(executor::ContextId, uint32_t, int32_t, executor::Handle*) override { return Status::kSuccess; }
  Status stream_query(executor::ContextId, executor::Handle) override { return Status::kSuccess; }
  Status event_create(executor::ContextId, uint32_t, executor::Handle*) override { return Status::kSuccess; }
  Status event_query(executor::ContextId, executor::Handle) override { return Status::kSuccess; }
  Status event_elapsed(executor::ContextId, executor::Handle, executor::Handle, int64_t*) override { return Status::kSuccess; }
  Status module_load(executor::ContextId, std::span<const uint8_t>, executor::Handle*) override { return Status::kSuccess; }
  Status function_get(executor::ContextId, executor::Handle, std::string_view, executor::Handle*, executor::FunctionInfo*) override { return Status::kSuccess; }
  Status var_get(executor::ContextId, executor::Handle, std::string_view, uint64_t, uint64_t*) override { return Status::kSuccess; }
  Status func_attributes(executor::ContextId, executor::Handle, executor::FunctionAttributes*) override { return Status::kSuccess; }
  Status accept(const executor::Work&) override { return Status::kSuccess; }
  executor::ExecResult execute(const executor::Work& w) override {
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

 private:
  executor::DeviceInfo info_;
};

// A gate whose answer the test sets.
class ScriptedGate final : public QuotaGate {
 public:
  std::atomic<Grant::Kind> answer{Grant::Kind::kRun};
  Grant reserve(TenantId, Nanos want) override {
    return {answer.load(), want, answer == Grant::Kind::kReject ? Status::kDevicesUnavailable : Status::kSuccess};
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

  explicit Harness(size_t max_queued = 4096)
      : dispatcher(&backend, std::make_unique<RoundRobinPolicy>(2 * kMillisecond), &gate, &clock,
                   DispatcherConfig{max_queued},
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
  h.dispatcher.purge_context(1, 10);
  REQUIRE(eventually([&] { return h.completions() + h.backend.discarded.size() == 60; }));
  std::lock_guard lock(h.backend.mu);
  bool context11_all_ran = true;
  for (int i = 50; i < 60; ++i) {
    bool ran = false;
    for (auto& [ctx, seq] : h.backend.executed) ran |= (ctx == 11 && seq == i);
    context11_all_ran &= ran;
  }
  CHECK(context11_all_ran);
  CHECK_FALSE(h.backend.discarded.empty());
  // Nothing of context 10 ran after the purge returned: every executed one
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
  std::this_thread::sleep_for(50ms);
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
