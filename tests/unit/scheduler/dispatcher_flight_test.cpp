// Launches left on the device (Backend::issue_batch): the dispatcher hands
// them back first to the next batch of their context, has another tenant's
// batch finish them, finishes them before anything else runs, answers each
// once and in order, charges them to their own tenant, and a purge waits for
// them.
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

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

std::string seqs(std::span<const executor::Work* const> works) {
  std::string s;
  for (const executor::Work* w : works) s += (s.empty() ? "" : " ") + std::to_string(seq_of(*w));
  return s;
}

// Issues the carried items and up to `run_at_most` more of a batch, and
// leaves up to `leave` of the new ones on the "device" when the limits
// allow; the rest of those issued finish. Keeps what it was asked, in order,
// and any breach of the contract it saw.
class FlightBackend final : public test::QuietBackend {
 public:
  FlightBackend() : QuietBackend("flight") {}
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> log;
  std::vector<std::string> breaches;  // checked by the test thread (Catch2 is not thread-safe)
  std::vector<executor::BatchLimits> limits;
  size_t leave = 2;
  size_t run_at_most = 1000;
  uint64_t item_ns = 1000;
  bool hold_finish = false;  // finish_batch waits while set
  bool finishing = false;    // a finish_batch is waiting on hold_finish
  std::map<executor::ContextId, size_t> in_flight;

  uint32_t max_batch_depth() const override { return 8; }

  void issue_batch(executor::BatchRun& run, const executor::BatchLimits& l,
                   executor::BatchRun* other) override {
    const executor::ContextId ctx = run.works[0]->context;
    {
      std::lock_guard lock(mu);
      limits.push_back(l);
      log.push_back("issue " + std::to_string(ctx) + ": " + seqs(run.works) + " carried " +
                    std::to_string(run.carried) + (other ? " other" : ""));
      if (run.carried != in_flight[ctx]) breaches.push_back("carried " + std::to_string(run.carried));
      for (const auto& [c, n] : in_flight) {
        if (n > 0 && c != ctx && (!other || other->works[0]->context != c)) {
          breaches.push_back("context " + std::to_string(c) + " left in flight");
        }
      }
    }
    if (other) finish_batch(*other);
    std::lock_guard lock(mu);
    const size_t n = run.works.size();
    const size_t issued = std::min(n, run.carried + run_at_most);
    const bool may_leave = l.may_leave_in_flight && (l.work_follows || issued < n);
    run.in_flight = may_leave ? std::min(leave, issued - run.carried) : 0;
    run.finished = issued - run.in_flight;
    for (size_t i = 0; i < run.finished; ++i) run.results[i] = {Status::kSuccess, item_ns};
    in_flight[ctx] = run.in_flight;
  }
  void finish_batch(executor::BatchRun& run) override {
    std::unique_lock lock(mu);
    finishing = true;
    cv.notify_all();
    cv.wait(lock, [&] { return !hold_finish; });
    finishing = false;
    const executor::ContextId ctx = run.works[0]->context;
    log.push_back("finish " + std::to_string(ctx) + ": " + seqs(run.works));
    if (run.works.size() != in_flight[ctx]) breaches.push_back("finish of a wrong count");
    for (size_t i = 0; i < run.works.size(); ++i) run.results[i] = {Status::kSuccess, item_ns};
    run.finished = run.works.size();
    run.in_flight = 0;
    in_flight[ctx] = 0;
  }
  executor::ExecResult execute(const executor::Work& w) override {
    std::lock_guard lock(mu);
    log.push_back("execute " + std::to_string(w.context) + ": " + std::to_string(seq_of(w)));
    for (const auto& [c, n] : in_flight) {
      if (n > 0) breaches.push_back("executed with context " + std::to_string(c) + " in flight");
    }
    return {Status::kSuccess, item_ns};
  }
};

struct Harness {
  FlightBackend backend;
  UnlimitedGate gate;
  SteadyClock clock;
  std::mutex done_mu;
  std::condition_variable done_cv;
  std::map<TenantId, std::vector<int>> answered;  // guarded by done_mu
  int completions = 0;                            // guarded by done_mu
  Dispatcher dispatcher;

  explicit Harness(size_t max_batch = 64)
      : dispatcher(&backend, std::make_unique<RoundRobinPolicy>(2 * kMillisecond), &gate, &clock,
                   DispatcherConfig{4096, 4, max_batch},
                   [this](const Command& c, const executor::ExecResult&) {
                     std::lock_guard lock(done_mu);
                     answered[c.tenant].push_back(seq_of(c.work));
                     ++completions;
                     done_cv.notify_all();
                   },
                   [] {}) {
    dispatcher.add_tenant(1, {});
  }
  void wait_for(int n) {
    std::unique_lock lock(done_mu);
    REQUIRE(done_cv.wait_for(lock, 60s, [&] { return completions >= n; }));
  }
  void submit(TenantId tenant, executor::ContextId ctx, int seq, bool launch = true) {
    Command c;
    c.tenant = tenant;
    c.work.context = ctx;
    if (launch) {
      c.work.op = executor::Launch{7, {static_cast<uint32_t>(seq), 1, 1}, {1, 1, 1}, 0, {}};
    } else {
      c.work.op = executor::Memset{0, 1, static_cast<uint8_t>(seq)};
    }
    dispatcher.submit(std::move(c));
  }
  void check_clean() {
    std::lock_guard lock(backend.mu);
    for (const std::string& b : backend.breaches) FAIL_CHECK(b);
  }
};

std::vector<int> iota(int from, int to) {
  std::vector<int> v;
  for (int i = from; i < to; ++i) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("dispatcher flight: launches left on the device go first in their context's next batch") {
  Harness h(4);  // full batches: more of the tenant's launches follow each
  for (int i = 0; i < 10; ++i) h.submit(1, 5, i);
  h.dispatcher.start();
  h.wait_for(10);
  h.dispatcher.stop();
  h.check_clean();
  std::lock_guard lock(h.backend.mu);
  CHECK(h.answered[1] == iota(0, 10));  // each once, in order
  REQUIRE(h.backend.log.size() >= 3);
  CHECK(h.backend.log[0] == "issue 5: 0 1 2 3 carried 0");
  CHECK(h.backend.log[1] == "issue 5: 2 3 4 5 6 7 carried 2");  // the two in flight lead
  CHECK(h.backend.limits[0].may_leave_in_flight);
  CHECK(h.backend.limits[0].work_follows);
  CHECK(h.dispatcher.usage(1).gpu_ns == 10 * h.backend.item_ns);
  CHECK(h.dispatcher.usage(1).kernels == 10);
}

TEST_CASE("dispatcher flight: the next tenant's batch finishes them; each tenant is charged its own") {
  Harness h;
  h.dispatcher.add_tenant(2, {});
  h.backend.item_ns = 1 * kMillisecond;
  h.backend.run_at_most = 2;  // two finished items use a 2 ms slice: turns alternate
  for (int i = 0; i < 12; ++i) h.submit(1, 5, i);
  for (int i = 0; i < 12; ++i) h.submit(2, 6, 100 + i);
  h.dispatcher.start();
  h.wait_for(24);
  h.dispatcher.stop();
  h.check_clean();
  std::lock_guard lock(h.backend.mu);
  CHECK(h.answered[1] == iota(0, 12));
  CHECK(h.answered[2] == iota(100, 112));
  CHECK(h.dispatcher.usage(1).gpu_ns == 12 * kMillisecond);
  CHECK(h.dispatcher.usage(2).gpu_ns == 12 * kMillisecond);
  const auto handed = std::count_if(h.backend.log.begin(), h.backend.log.end(), [](const std::string& l) {
    return l.ends_with(" other");
  });
  CHECK(handed >= 2);  // the turns changed hands with launches in flight
}

TEST_CASE("dispatcher flight: other work of the context waits for them") {
  Harness h(4);
  for (int i = 0; i < 4; ++i) h.submit(1, 5, i);
  h.submit(1, 5, 4, false);  // a memset
  for (int i = 5; i < 7; ++i) h.submit(1, 5, i);
  h.dispatcher.start();
  h.wait_for(7);
  h.dispatcher.stop();
  h.check_clean();
  std::lock_guard lock(h.backend.mu);
  CHECK(h.answered[1] == iota(0, 7));
  REQUIRE(h.backend.log.size() >= 3);
  CHECK(h.backend.log[0] == "issue 5: 0 1 2 3 carried 0");
  CHECK(h.backend.log[1] == "finish 5: 2 3");
  CHECK(h.backend.log[2] == "execute 5: 4");
}

TEST_CASE("dispatcher flight: nothing is left behind when nothing follows, or at depth 1") {
  Harness h;
  int expected = 0;
  SECTION("one tenant, a short batch: it waits for its launches") {
    for (int i = 0; i < 3; ++i) h.submit(1, 5, i);
    expected = 3;
  }
  SECTION("depth 1") {
    h.dispatcher.set_overlap_depth(1);
    h.dispatcher.add_tenant(2, {});
    for (int i = 0; i < 3; ++i) h.submit(1, 5, i);
    for (int i = 3; i < 6; ++i) h.submit(2, 6, i);
    expected = 6;
  }
  h.dispatcher.start();
  h.wait_for(expected);
  h.dispatcher.stop();
  h.check_clean();
  std::lock_guard lock(h.backend.mu);
  REQUIRE(!h.backend.limits.empty());
  const executor::BatchLimits& l = h.backend.limits[0];
  CHECK((!l.may_leave_in_flight || !l.work_follows));
  for (const std::string& line : h.backend.log) CHECK(!line.starts_with("finish"));
}

TEST_CASE("dispatcher flight: a purge waits for its context's launches in flight, unanswered") {
  Harness h(4);
  {
    std::lock_guard lock(h.backend.mu);
    h.backend.hold_finish = true;
  }
  for (int i = 0; i < 4; ++i) h.submit(1, 5, i);
  h.dispatcher.start();
  // Two finish; two stay in flight; the queue is then empty, so the
  // dispatcher finishes them, and waits here.
  {
    std::unique_lock lock(h.backend.mu);
    REQUIRE(h.backend.cv.wait_for(lock, 60s, [&] { return h.backend.finishing; }));
  }
  bool retired = false;  // guarded by h.done_mu
  h.dispatcher.purge_context(1, 5, [&] {
    std::lock_guard lock(h.done_mu);
    retired = true;
    h.done_cv.notify_all();
  });
  {
    std::lock_guard lock(h.done_mu);
    CHECK(!retired);  // its launches are still on the device
  }
  {
    std::lock_guard lock(h.backend.mu);
    h.backend.hold_finish = false;
  }
  h.backend.cv.notify_all();
  // The dispatcher thread runs it once they finished.
  {
    std::unique_lock lock(h.done_mu);
    REQUIRE(h.done_cv.wait_for(lock, 60s, [&] { return retired; }));
  }
  h.dispatcher.stop();
  h.check_clean();
  std::lock_guard lock(h.done_mu);
  CHECK(h.answered[1] == std::vector<int>{0, 1});  // the purged ones are not answered
}
