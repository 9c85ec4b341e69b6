// One EEVDF level on its own: virtual time, eligibility, lag, and the state
// transitions listed in eevdf_queue.h.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "eevdf_queue.h"

using namespace vgpu::scheduler;
using detail::EevdfQueue;

namespace {
constexpr Nanos kSlice = 2 * kMillisecond;
}

TEST_CASE("eevdf: an empty queue picks nothing; one entity always runs") {
  EevdfQueue q(kSlice);
  CHECK(q.pick() == EevdfQueue::kNone);
  const auto a = q.add(7, 1);
  CHECK(q.pick() == EevdfQueue::kNone);  // idle entities do not run
  q.activate(a);
  for (int i = 0; i < 5; ++i) {
    REQUIRE(q.pick() == a);
    q.charge(a, 3 * kMillisecond);
    CHECK(q.lag_ns(a) == 0);  // alone, it is always exactly at its share
  }
  CHECK(q.owner(a) == 7);
}

TEST_CASE("eevdf: equal weights alternate, and lags sum to zero") {
  EevdfQueue q(kSlice);
  const auto a = q.add(1, 1), b = q.add(2, 1);
  q.activate(a);
  q.activate(b);
  std::vector<EevdfQueue::Slot> order;
  for (int i = 0; i < 6; ++i) {
    const auto s = q.pick();
    order.push_back(s);
    q.charge(s, kSlice);
    CHECK(q.lag(a) + q.lag(b) == 0);
  }
  for (size_t i = 1; i < order.size(); ++i) CHECK(order[i] != order[i - 1]);
}

TEST_CASE("eevdf: an overrun is paid back before the tenant runs again") {
  EevdfQueue q(kSlice);
  const auto a = q.add(1, 1), b = q.add(2, 1);
  q.activate(a);
  q.activate(b);
  REQUIRE(q.pick() == a);
  q.charge(a, 10 * kMillisecond);  // a kernel five slices long
  CHECK(q.lag_ns(a) == -5 * kMillisecond);
  // b runs at least until a's debt is paid (10 ms of b); a's next request is
  // sized by its 10 ms kernels, so it comes back owed, but no more than that.
  Nanos b_time = 0;
  while (true) {
    const auto s = q.pick();
    if (s == a) break;
    q.charge(s, kMillisecond);
    b_time += kMillisecond;
  }
  CHECK(b_time >= 10 * kMillisecond);
  CHECK(q.lag_ns(a) >= 0);
  CHECK(q.lag_ns(a) <= kSlice + 10 * kMillisecond);
}

TEST_CASE("eevdf: an idle entity banks at most one slice of credit, but keeps its debt") {
  EevdfQueue q(kSlice);
  const auto a = q.add(1, 1), b = q.add(2, 1);
  q.activate(a);
  q.activate(b);
  // b runs 20 ms while a waits: a is owed 10 ms.
  REQUIRE(q.pick() == a);
  q.deactivate(a);
  q.activate(a);
  for (int i = 0; i < 10; ++i) {
    q.finish_turn();
    q.charge(b, 2 * kMillisecond);
  }
  CHECK(q.lag_ns(a) == Approx(10 * kMillisecond).margin(1));
  q.deactivate(a);
  CHECK(q.lag_ns(a) == kSlice);  // the credit it keeps
  q.activate(a);
  CHECK(q.lag_ns(a) == Approx(kSlice).margin(1));

  // Debt is kept in full.
  q.charge(a, 12 * kMillisecond);
  const int64_t debt = q.lag_ns(a);
  CHECK(debt < -kSlice);
  q.deactivate(a);
  q.activate(a);
  CHECK(q.lag_ns(a) == Approx(debt).margin(1));
}

TEST_CASE("eevdf: weights set the shares") {
  EevdfQueue q(kSlice);
  const auto a = q.add(1, 1), b = q.add(2, 3);
  q.activate(a);
  q.activate(b);
  Nanos got[2] = {0, 0};
  for (int i = 0; i < 4000; ++i) {
    const auto s = q.pick();
    q.charge(s, 500 * kMicrosecond);
    got[s == a ? 0 : 1] += 500 * kMicrosecond;
  }
  CHECK(static_cast<double>(got[1]) / static_cast<double>(got[0]) == Approx(3.0).epsilon(0.01));
}

TEST_CASE("eevdf: a weight change keeps the lag") {
  EevdfQueue q(kSlice);
  const auto a = q.add(1, 1), b = q.add(2, 1);
  q.activate(a);
  q.activate(b);
  REQUIRE(q.pick() == a);
  q.charge(a, 4 * kMillisecond);
  const int64_t before = q.lag(a);
  q.set_weight(a, 5);
  CHECK(std::abs(q.lag(a) - before) <= 5);  // rounding to a virtual tick
  CHECK(q.lag(a) + q.lag(b) == Approx(0).margin(5));
}

TEST_CASE("eevdf: add_lag moves an entity's lag and the others give it up") {
  EevdfQueue q(kSlice);
  const auto a = q.add(1, 1), b = q.add(2, 2), c = q.add(3, 1);
  q.activate(a);
  q.activate(b);
  q.activate(c);
  q.add_lag(a, 3 * kMillisecond * EevdfQueue::kScale);
  CHECK(q.lag_ns(a) == Approx(3 * kMillisecond).margin(2));
  CHECK(q.lag_ns(b) + q.lag_ns(c) == Approx(-3 * kMillisecond).margin(2));
}

TEST_CASE("eevdf: a woken entity ends the running one's turn once it has had its part") {
  EevdfQueue q(kSlice);
  const auto a = q.add(1, 1), b = q.add(2, 1);
  q.activate(a);
  REQUIRE(q.pick() == a);
  q.charge(a, 100 * kMicrosecond);
  CHECK_FALSE(q.should_yield());  // nobody else wants the GPU
  q.activate(b);                   // wakes up with no lag: eligible at once
  CHECK(q.should_yield());         // a, alone until now, is at its share
  REQUIRE(q.pick() == b);
  CHECK_FALSE(q.should_yield());
}

TEST_CASE("eevdf: removed slots are reused") {
  EevdfQueue q(kSlice);
  const auto a = q.add(1, 1);
  q.activate(a);
  q.remove(a);
  CHECK(q.active_count() == 0);
  const auto b = q.add(2, 1);
  CHECK(b == a);
  CHECK(q.owner(b) == 2);
  CHECK(q.pick() == EevdfQueue::kNone);
}
