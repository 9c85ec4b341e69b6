// Budgets in memory: reservations, settling, windows and renewal.
#include <catch2/catch.hpp>

#include "vgpu/policy/budget_book.h"
#include "vgpu/policy/units.h"

#include "gpu_time.h"

using namespace vgpu::policy;
using vgpu::policy::test::per;

namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t kDay = 86400;
constexpr int64_t kMonday = 1736121600;  // 2025-01-06 00:00 UTC, a Monday

}  // namespace

TEST_CASE("windows: days from midnight UTC, weeks from Monday") {
  const GpuTime day = per(1, PeriodKind::kDay), week = per(1, PeriodKind::kWeek);
  CHECK(window_at(day, kMonday + 5) == Window{kMonday, kMonday + kDay});
  CHECK(window_at(day, kMonday - 1) == Window{kMonday - kDay, kMonday});
  CHECK(window_at(week, kMonday + 6 * kDay + 86399) == Window{kMonday, kMonday + 7 * kDay});
  CHECK(window_at(week, kMonday + 7 * kDay) == Window{kMonday + 7 * kDay, kMonday + 14 * kDay});
  CHECK(window_at(week, kMonday - 1).start == kMonday - 7 * kDay);
}

TEST_CASE("a holder gets no reservation past its budget and overshoots by at most one slice") {
  BudgetBook book([](const Holder&, const Window&) { return int64_t{0}; });
  const Holder alice{1, 0};
  book.configure(alice, per(10 * kMs, PeriodKind::kDay), kMonday);
  auto r = book.reserve(alice, 4 * kMs, kMonday);
  CHECK(r.granted);
  CHECK(r.ns == 4 * kMs);
  // While one slice runs, a second reservation only gets what is left.
  auto r2 = book.reserve(alice, 8 * kMs, kMonday);
  CHECK(r2.ns == 6 * kMs);
  CHECK_FALSE(book.reserve(alice, 1, kMonday).granted);
  book.settle(alice, r.ns, 5 * kMs, kMonday);  // ran 1 ms past its reservation
  book.settle(alice, r2.ns, 6 * kMs, kMonday);
  const BudgetState s = book.state(alice, kMonday);
  CHECK(s.spent_ns == 11 * kMs);
  CHECK(s.left_ns() == 0);
  CHECK_FALSE(book.reserve(alice, 1, kMonday).granted);
}

TEST_CASE("the window renews on time and the budget comes back") {
  BudgetBook book([](const Holder&, const Window&) { return int64_t{0}; });
  const Holder h{0, 7};
  book.configure(h, per(kMs, PeriodKind::kDay), kMonday + 100);
  auto r = book.reserve(h, kMs, kMonday + 100);
  book.settle(h, r.ns, kMs, kMonday + 100);
  CHECK_FALSE(book.reserve(h, 1, kMonday + kDay - 1).granted);
  auto next = book.reserve(h, kMs, kMonday + kDay);
  CHECK(next.granted);
  CHECK(book.state(h, kMonday + kDay).window.start == kMonday + kDay);
}

TEST_CASE("a range gives one budget inside its days and none outside") {
  BudgetBook book([](const Holder&, const Window&) { return int64_t{0}; });
  GpuTime g = per(kMs, PeriodKind::kRange);
  g.range_start = kMonday;
  g.range_end = kMonday + 2 * kDay;
  const Holder h{3, 0};
  book.configure(h, g, kMonday - 10);
  CHECK_FALSE(book.reserve(h, 1, kMonday - 10).granted);
  CHECK(book.reserve(h, 1, kMonday + kDay).granted);
  CHECK_FALSE(book.reserve(h, 1, kMonday + 2 * kDay).granted);
  CHECK_FALSE(book.state(h, kMonday + 3 * kDay).open);
}

TEST_CASE(
    "a new holder starts from the ledger; a changed period re-reads it keeping unwritten time") {
  int64_t day_ledger = 3 * kMs, week_ledger = 20 * kMs;
  BudgetBook book([&](const Holder&, const Window& w) {
    return w.end - w.start == kDay ? day_ledger : week_ledger;
  });
  const Holder h{9, 0};
  book.configure(h, per(10 * kMs, PeriodKind::kDay), kMonday + 10);
  CHECK(book.state(h, kMonday + 10).spent_ns == 3 * kMs);
  // 2 ms charged in memory, not yet in the ledger.
  book.settle(h, 0, 2 * kMs, kMonday + 10);
  // Raising the budget keeps the window and what was spent.
  book.configure(h, per(50 * kMs, PeriodKind::kDay), kMonday + 11);
  CHECK(book.state(h, kMonday + 11).spent_ns == 5 * kMs);
  // A weekly budget reads the week from the ledger and keeps the 2 ms unwritten.
  book.configure(h, per(50 * kMs, PeriodKind::kWeek), kMonday + 12);
  CHECK(book.state(h, kMonday + 12).spent_ns == 22 * kMs);
}

TEST_CASE("unlimited holders always run and still count what they spend") {
  BudgetBook book([](const Holder&, const Window&) { return int64_t{0}; });
  const Holder h{0, 1};
  book.configure(h, GpuTime{}, kMonday);
  auto r = book.reserve(h, 1000 * kMs, kMonday);
  CHECK(r.granted);
  book.settle(h, r.ns, 7 * kMs, kMonday);
  const BudgetState s = book.state(h, kMonday);
  CHECK_FALSE(s.limited);
  CHECK(s.spent_ns == 7 * kMs);
  CHECK(s.reserved_ns == 0);
}
