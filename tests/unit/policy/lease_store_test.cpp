// Budget leases in the store (lease.h), on SQLite and on PostgreSQL: what a
// host is granted given the other hosts' leases and ledger rows, expiry,
// giving back, and several hosts spending one budget through leases.
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "temp_db.h"
#include "vgpu/policy/budget_book.h"

#include "gpu_time.h"

using namespace vgpu::policy;
using namespace vgpu::policy::test;
using vgpu::Result;

namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t kMonday = 1736121600;  // 2025-01-06 00:00 UTC
constexpr uint32_t kAlice = 7;

// Leases of the whole budget (one host counted), to test the caps.
LeaseRules whole_budget() {
  LeaseRules r;
  r.budget_share = 1;
  r.max_lease_ns = INT64_MAX / 4;
  r.min_lease_ns = 1;
  return r;
}

LeaseRequest ask(const std::string& host, int64_t used, int64_t now, bool give_back = false) {
  LeaseRequest r;
  r.student = kAlice;
  r.host = host;
  r.window_start = kMonday;
  r.window_end = kMonday + 86400;
  r.budget_ns = 100 * kMs;
  r.used_ns = used;
  r.give_back = give_back;
  r.now = now;
  return r;
}

void spend_in_ledger(Store& s, const std::string& host, int64_t seq, TenantId vm, int64_t ns) {
  UsageRecord r{vm, kMonday, static_cast<uint64_t>(ns), 1, 0, 0, 0};
  r.student = kAlice;
  r.host = host;
  bool applied = false;
  REQUIRE(s.record_host_usage(host, seq, std::vector{r}, &applied).ok());
  REQUIRE(applied);
}

}  // namespace

TEST_CASE("hosts' leases of one budget never add up to more than it", "[lease]") {
  TempDb db;
  std::unique_ptr<Store> s;
  REQUIRE(db.open(&s).ok());
  const LeaseRules rules = whole_budget();
  const int64_t t = kMonday + 60;
  LeaseGrant a, b;
  REQUIRE(s->lease_budget(ask("node1", 0, t), rules, &a).ok());
  CHECK(a.limit_ns == 100 * kMs);
  CHECK(a.expires_at == t + rules.ttl_s);
  CHECK_FALSE(a.exhausted);
  // node1's lease holds the whole budget: node2 gets nothing, yet it is not spent.
  REQUIRE(s->lease_budget(ask("node2", 0, t), rules, &b).ok());
  CHECK(b.limit_ns == 0);
  CHECK_FALSE(b.exhausted);
  // node1 spent 30 and gives the rest back: node2 can have it.
  REQUIRE(s->lease_budget(ask("node1", 30 * kMs, t, true), rules, &a).ok());
  CHECK(a.limit_ns == 30 * kMs);
  REQUIRE(s->lease_budget(ask("node2", 0, t), rules, &b).ok());
  CHECK(b.limit_ns == 70 * kMs);
  CHECK(b.spent_ns == 30 * kMs);
}

TEST_CASE("a host is counted for the larger of its ledger rows and its lease", "[lease]") {
  TempDb db;
  std::unique_ptr<Store> s;
  REQUIRE(db.open(&s).ok());
  TenantId vm = 0;
  REQUIRE(s->tenant_for_vm("alice-a", &vm).ok());
  const LeaseRules rules = whole_budget();
  const int64_t t = kMonday + 60;
  LeaseGrant g;
  // node1 spent 80 (in the ledger) and gave back: 20 are left for node2.
  spend_in_ledger(*s, "node1", 1, vm, 80 * kMs);
  REQUIRE(s->lease_budget(ask("node1", 0, t, true), rules, &g).ok());
  CHECK(g.used_ns == 80 * kMs);  // the ledger knows more than the request
  CHECK(g.limit_ns == 80 * kMs);
  REQUIRE(s->lease_budget(ask("node2", 0, t), rules, &g).ok());
  CHECK(g.limit_ns == 20 * kMs);
  // node2 spends its 20: the budget is spent for everyone.
  spend_in_ledger(*s, "node2", 1, vm, 20 * kMs);
  REQUIRE(s->lease_budget(ask("node2", 20 * kMs, t), rules, &g).ok());
  CHECK(g.limit_ns == 20 * kMs);
  CHECK(g.exhausted);
  REQUIRE(s->lease_budget(ask("node3", 0, t), rules, &g).ok());
  CHECK(g.limit_ns == 0);
  CHECK(g.exhausted);
  // Another student's budget is another budget.
  LeaseRequest bob = ask("node3", 0, t);
  bob.student = kAlice + 1;
  REQUIRE(s->lease_budget(bob, rules, &g).ok());
  CHECK(g.limit_ns == 100 * kMs);
}

TEST_CASE("a lease not renewed expires: the host counts for what it last reported", "[lease]") {
  TempDb db;
  std::unique_ptr<Store> s;
  REQUIRE(db.open(&s).ok());
  const LeaseRules rules = whole_budget();
  const int64_t t = kMonday + 60;
  LeaseGrant g;
  REQUIRE(s->lease_budget(ask("node1", 10 * kMs, t), rules, &g).ok());
  CHECK(g.limit_ns == 100 * kMs);
  REQUIRE(s->lease_budget(ask("node2", 0, t + rules.ttl_s - 1), rules, &g).ok());
  CHECK(g.limit_ns == 0);  // still live
  REQUIRE(s->lease_budget(ask("node2", 0, t + rules.ttl_s), rules, &g).ok());
  CHECK(g.limit_ns == 90 * kMs);  // node1 went quiet after spending 10
  CHECK(g.spent_ns == 10 * kMs);
}

TEST_CASE("a host that restarted is counted for what its last lease reported", "[lease]") {
  TempDb db;
  std::unique_ptr<Store> s;
  REQUIRE(db.open(&s).ok());
  const LeaseRules rules = whole_budget();
  LeaseGrant g;
  REQUIRE(s->lease_budget(ask("node1", 40 * kMs, kMonday + 60), rules, &g).ok());
  // Restarted, its usage still in its spool: it knows of nothing spent.
  REQUIRE(s->lease_budget(ask("node1", 0, kMonday + 70), rules, &g).ok());
  CHECK(g.used_ns == 40 * kMs);
  CHECK(g.limit_ns == 100 * kMs);
}

TEST_CASE("a lease's size is a share of the budget for each live host", "[lease]") {
  TempDb db;
  std::unique_ptr<Store> s;
  REQUIRE(db.open(&s).ok());
  LeaseRules rules;
  rules.min_lease_ns = 1;
  const int64_t t = kMonday + 60;
  for (const char* host : {"node1", "node2", "node3", "node4"}) {
    REQUIRE(s->report_host({host, t, t, "sim", "[]"}).ok());
  }
  REQUIRE(s->report_host({"gone", t - 3600, t - 3600, "sim", "[]"}).ok());  // not live
  LeaseGrant g;
  REQUIRE(s->lease_budget(ask("node1", 0, t), rules, &g).ok());
  CHECK(g.limit_ns == lease_size(rules, 100 * kMs, 4));
  CHECK(g.limit_ns == 100 * kMs / 64);
}

TEST_CASE("a lease request is checked", "[lease]") {
  TempDb db;
  std::unique_ptr<Store> s;
  REQUIRE(db.open(&s).ok());
  LeaseGrant g;
  CHECK(s->lease_budget(ask("no de", 0, kMonday), {}, &g).code() == Result::Code::kInvalidArgument);
  LeaseRequest bad = ask("node1", -5, kMonday);
  CHECK(s->lease_budget(bad, {}, &g).code() == Result::Code::kInvalidArgument);
  std::unique_ptr<Store> ro;
  REQUIRE(db.open(&ro, StoreOptions{.read_only = true}).ok());
  CHECK(ro->lease_budget(ask("node1", 0, kMonday), {}, &g).code() == Result::Code::kReadOnly);
}

TEST_CASE("three hosts spending one budget through leases stay within it and can drain it",
          "[lease]") {
  TempDb db;
  std::unique_ptr<Store> s;
  REQUIRE(db.open(&s).ok());
  TenantId vm = 0;
  REQUIRE(s->tenant_for_vm("alice-a", &vm).ok());
  LeaseRules rules;
  rules.min_lease_ns = 1;
  const int64_t budget = 2000 * kMs;
  int64_t now = kMonday + 60;
  struct Host {
    std::string name;
    BudgetBook book{[](const Holder&, const Window&) { return int64_t{0}; }, true};
    int64_t spent = 0, flushed = 0, seq = 0;
  };
  std::vector<Host> hosts(3);
  for (size_t i = 0; i < hosts.size(); ++i) {
    hosts[i].name = "node" + std::to_string(i + 1);
    hosts[i].book.configure({kAlice, 0}, per(budget, PeriodKind::kDay), now);
    REQUIRE(s->report_host({hosts[i].name, now, now, "sim", "[]"}).ok());
  }
  std::mt19937 rng(42);
  int refused = 0;
  for (int step = 0; step < 4000 && refused < 300; ++step) {
    Host& h = hosts[rng() % hosts.size()];
    const int64_t want = (1 + rng() % 20) * kMs;
    const auto r = h.book.reserve({kAlice, 0}, want, now);
    if (r.granted && r.ns > 0) {
      h.book.settle({kAlice, 0}, r.ns, r.ns, now);
      h.spent += r.ns;
    } else if (!r.lease_pending) {
      ++refused;  // the budget is spent
    }
    if (step % 7 == 0 && h.spent > h.flushed) {  // the host's usage batch
      spend_in_ledger(*s, h.name, ++h.seq, vm, h.spent - h.flushed);
      h.flushed = h.spent;
    }
    if (step % 50 == 0) ++now;  // time passes: some leases are renewed or given back
    for (Host& each : hosts) {
      for (const LeaseNeed& need : each.book.lease_needs(now, rules)) {
        LeaseRequest req = need.request;
        req.host = each.name;
        LeaseGrant g;
        REQUIRE(s->lease_budget(req, rules, &g).ok());
        each.book.lease_answer(need, &g, now, rules);
      }
    }
  }
  int64_t total = 0;
  for (const Host& h : hosts) total += h.spent;
  CHECK(total <= budget);
  CHECK(total >= budget - 3 * lease_size(rules, budget, 3));  // leases do not strand the budget
  CHECK(refused > 0);
}
