// Budgets spent from leases (lease.h): what BudgetBook asks the store for,
// and how it spends what the store grants, without the store.
#include <catch2/catch.hpp>

#include "vgpu/policy/budget_book.h"

#include "gpu_time.h"

using namespace vgpu::policy;
using vgpu::policy::test::per;

namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t kMonday = 1736121600;  // 2025-01-06 00:00 UTC

LeaseGrant grant(int64_t limit, int64_t used, int64_t spent, bool exhausted = false) {
  LeaseGrant g;
  g.limit_ns = limit;
  g.used_ns = used;
  g.spent_ns = spent;
  g.exhausted = exhausted;
  return g;
}

struct Leased {
  BudgetBook book{[](const Holder&, const Window&) { return int64_t{0}; }, true};
  LeaseRules rules;
  Holder alice{1, 0};
  int64_t now = kMonday + 100;
  Leased() { book.configure(alice, per(1000 * kMs, PeriodKind::kDay), now); }
  std::vector<LeaseNeed> needs() { return book.lease_needs(now, rules); }
  // A first lease of `limit`, as the store would grant it.
  void take(int64_t limit) {
    (void)book.reserve(alice, 1, now);
    const auto asked = needs();
    REQUIRE(asked.size() == 1);
    const LeaseGrant g = grant(limit, 0, 0);
    book.lease_answer(asked[0], &g, now, rules);
  }
};

}  // namespace

TEST_CASE("without a lease a reservation waits for one, and the need says what this host spent",
          "[lease]") {
  Leased l;
  CHECK(l.needs().empty());  // nobody wants time yet
  const auto r = l.book.reserve(l.alice, 10 * kMs, l.now);
  CHECK_FALSE(r.granted);
  CHECK(r.lease_pending);
  auto needs = l.needs();
  REQUIRE(needs.size() == 1);
  CHECK(needs[0].holder == l.alice);
  CHECK(needs[0].request.student == 1);
  CHECK(needs[0].request.budget_ns == 1000 * kMs);
  CHECK(needs[0].request.used_ns == 0);
  CHECK_FALSE(needs[0].request.give_back);
  CHECK(needs[0].request.window_start == kMonday);
  CHECK(l.needs().empty());  // asked once until answered

  const LeaseGrant g = grant(100 * kMs, 0, 0);
  l.book.lease_answer(needs[0], &g, l.now, l.rules);
  // The lease bounds reservations, not only the budget.
  CHECK(l.book.reserve(l.alice, 60 * kMs, l.now).ns == 60 * kMs);
  CHECK(l.book.reserve(l.alice, 60 * kMs, l.now).ns == 40 * kMs);
  const auto dry = l.book.reserve(l.alice, 1, l.now);
  CHECK_FALSE(dry.granted);
  CHECK(dry.lease_pending);
}

TEST_CASE("a lease is renewed when half is spent, not before", "[lease]") {
  Leased l;
  l.take(100 * kMs);
  std::vector<LeaseNeed> needs;
  auto r = l.book.reserve(l.alice, 40 * kMs, l.now);
  l.book.settle(l.alice, r.ns, 40 * kMs, l.now);
  CHECK(l.needs().empty());  // 60 left of 100
  r = l.book.reserve(l.alice, 20 * kMs, l.now);
  l.book.settle(l.alice, r.ns, 20 * kMs, l.now);
  needs = l.needs();  // 40 left: under half
  REQUIRE(needs.size() == 1);
  CHECK(needs[0].request.used_ns == 60 * kMs);
  CHECK_FALSE(needs[0].request.give_back);
  const LeaseGrant more = grant(160 * kMs, 60 * kMs, 60 * kMs);
  l.book.lease_answer(needs[0], &more, l.now, l.rules);
  CHECK(l.book.reserve(l.alice, 200 * kMs, l.now).ns == 100 * kMs);
  CHECK(l.book.state(l.alice, l.now).lease_limit_ns == 160 * kMs);
}

TEST_CASE("a lease in use is renewed before its time to live runs out", "[lease]") {
  Leased l;
  l.take(100 * kMs);
  std::vector<LeaseNeed> needs;
  l.now += l.rules.ttl_s / 2;
  const auto r = l.book.reserve(l.alice, 1 * kMs, l.now);  // still in use
  CHECK(r.granted);
  needs = l.needs();
  REQUIRE(needs.size() == 1);
  CHECK_FALSE(needs[0].request.give_back);
}

TEST_CASE("an idle holder gives its unspent lease back, and stops spending it at once", "[lease]") {
  Leased l;
  l.take(100 * kMs);
  std::vector<LeaseNeed> needs;
  auto r = l.book.reserve(l.alice, 30 * kMs, l.now);
  l.book.settle(l.alice, r.ns, 30 * kMs, l.now);
  l.now += l.rules.idle_return_s - 1;
  CHECK(l.needs().empty());  // not idle long enough
  l.now += 1;
  needs = l.needs();
  REQUIRE(needs.size() == 1);
  CHECK(needs[0].request.give_back);
  CHECK(needs[0].request.used_ns == 30 * kMs);
  // Given back before the store answers: nothing more is spent from it.
  CHECK(l.book.reserve(l.alice, 1, l.now).lease_pending);
  const LeaseGrant back = grant(30 * kMs, 30 * kMs, 30 * kMs);
  l.book.lease_answer(needs[0], &back, l.now, l.rules);
  // The waiting reservation above asks for a new lease.
  needs = l.needs();
  REQUIRE(needs.size() == 1);
  CHECK_FALSE(needs[0].request.give_back);
}

TEST_CASE("a spent budget applies the quota's on-exhaust; one held by other hosts waits",
          "[lease]") {
  Leased l;
  l.book.reserve(l.alice, 1, l.now);
  auto needs = l.needs();
  // Other hosts' leases hold the rest: nothing here for now, asked again later.
  const LeaseGrant held = grant(0, 0, 500 * kMs);
  l.book.lease_answer(needs[0], &held, l.now, l.rules);
  CHECK(l.book.reserve(l.alice, 1, l.now).lease_pending);
  CHECK(l.needs().empty());  // not before the retry time
  l.now += l.rules.retry_s;
  needs = l.needs();
  REQUIRE(needs.size() == 1);
  // Now every host's spending has reached the budget.
  const LeaseGrant spent = grant(0, 0, 1000 * kMs, true);
  l.book.lease_answer(needs[0], &spent, l.now, l.rules);
  const auto r = l.book.reserve(l.alice, 1, l.now);
  CHECK_FALSE(r.granted);
  CHECK_FALSE(r.lease_pending);
  CHECK(l.book.state(l.alice, l.now).spent_ns == 1000 * kMs);
  // A teacher raises the quota: leases are asked for again.
  l.book.configure(l.alice, per(2000 * kMs, PeriodKind::kDay), l.now);
  CHECK(l.book.reserve(l.alice, 1, l.now).lease_pending);
  CHECK(l.needs().size() == 1);
}

TEST_CASE("a failed lease request is asked again after the retry time; the lease held serves",
          "[lease]") {
  Leased l;
  l.take(100 * kMs);
  std::vector<LeaseNeed> needs;
  auto r = l.book.reserve(l.alice, 70 * kMs, l.now);
  l.book.settle(l.alice, r.ns, 70 * kMs, l.now);
  needs = l.needs();
  REQUIRE(needs.size() == 1);
  l.book.lease_answer(needs[0], nullptr, l.now, l.rules);          // the database is gone
  CHECK(l.book.reserve(l.alice, 50 * kMs, l.now).ns == 30 * kMs);  // the rest of the lease
  CHECK(l.needs().empty());
  l.now += l.rules.retry_s;
  CHECK(l.needs().size() == 1);
}

TEST_CASE("the store counting more of this host's spending (before a restart) is spent here too",
          "[lease]") {
  Leased l;
  l.book.reserve(l.alice, 1, l.now);
  auto needs = l.needs();
  const LeaseGrant g = grant(300 * kMs, 200 * kMs, 200 * kMs);
  l.book.lease_answer(needs[0], &g, l.now, l.rules);
  CHECK(l.book.state(l.alice, l.now).here_ns == 200 * kMs);
  CHECK(l.book.reserve(l.alice, 500 * kMs, l.now).ns == 100 * kMs);
}

TEST_CASE("a new window drops the old window's lease", "[lease]") {
  Leased l;
  l.take(100 * kMs);
  std::vector<LeaseNeed> needs;
  l.now = kMonday + 86400 + 10;  // the next day
  const auto r = l.book.reserve(l.alice, 1, l.now);
  CHECK(r.lease_pending);
  needs = l.needs();
  REQUIRE(needs.size() == 1);
  CHECK(needs[0].request.window_start == kMonday + 86400);
  CHECK(needs[0].request.used_ns == 0);
}

TEST_CASE("unlimited holders and unleased books need no lease", "[lease]") {
  BudgetBook leased([](const Holder&, const Window&) { return int64_t{0}; }, true);
  GpuTime unlimited;
  unlimited.unlimited = true;
  leased.configure({2, 0}, unlimited, kMonday);
  CHECK(leased.reserve({2, 0}, 5 * kMs, kMonday).ns == 5 * kMs);
  CHECK(leased.lease_needs(kMonday, {}).empty());
  BudgetBook plain([](const Holder&, const Window&) { return int64_t{0}; });
  plain.configure({1, 0}, per(10 * kMs, PeriodKind::kDay), kMonday);
  CHECK(plain.reserve({1, 0}, 5 * kMs, kMonday).ns == 5 * kMs);
  CHECK(plain.lease_needs(kMonday, {}).empty());
}

TEST_CASE("lease size: a share of the budget per host, between the minimum and the maximum",
          "[lease]") {
  const LeaseRules rules;
  const int64_t hour = 3600LL * 1000 * kMs;
  CHECK(lease_size(rules, 10 * hour, 3) == rules.max_lease_ns);
  CHECK(lease_size(rules, 48 * 1000 * kMs, 3) == 1000 * kMs);  // 48 s / (16 x 3)
  CHECK(lease_size(rules, 100 * kMs, 4) == rules.min_lease_ns);
  CHECK(lease_size(rules, 5 * kMs, 1) == 5 * kMs);  // never more than the budget
  CHECK(lease_overrun_bound(rules, 48 * 1000 * kMs, 3) == 3000 * kMs);
}
