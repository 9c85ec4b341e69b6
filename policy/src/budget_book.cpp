#include "vgpu/policy/budget_book.h"

#include <algorithm>

namespace vgpu::policy {

int64_t BudgetState::left_ns() const {
  if (!limited) return INT64_MAX;
  if (!open) return 0;
  return std::max<int64_t>(0, budget_ns - spent_ns - reserved_ns);
}

void BudgetBook::configure(const Holder& h, const GpuTime& g, int64_t now, const TimeZone& tz) {
  const Window w = window_at(g, now, tz);
  auto it = accounts_.find(h.key());
  if (it == accounts_.end()) {
    Account& a = accounts_[h.key()];
    a.holder = h;
    a.gpu_time = g;
    a.zone = tz;
    a.window = w;
    a.spent = ledger_(h, w);
    return;
  }
  Account& a = it->second;
  if (a.window != w) {
    // What was charged here but is not in the ledger yet belongs to `now`,
    // which lies in both windows; carry it over.
    int64_t unwritten = 0;
    if (a.window.contains(now)) {
      unwritten = std::max<int64_t>(0, a.spent - ledger_(h, a.window));
    }
    a.spent = ledger_(h, w) + unwritten;
    a.window = w;
    new_window(a);
  }
  if (!(a.gpu_time == g)) {
    // A teacher changed the quota: a budget the store called spent may not be.
    a.exhausted = false;
    a.next_ask = 0;
  }
  a.gpu_time = g;
  a.zone = tz;
}

void BudgetBook::new_window(Account& a) {
  a.here = 0;
  a.limit = -1;
  a.granted = 0;
  a.renew_at = 0;
  a.next_ask = 0;
  a.exhausted = false;
}

int64_t BudgetBook::lease_left(const Account& a) const {
  return a.limit < 0 ? 0 : a.limit - a.here - a.reserved;
}

BudgetBook::Account& BudgetBook::renewed(const Holder& h, int64_t now) {
  Account& a = accounts_[h.key()];
  // Day and week windows roll forward; a range stays what it is.
  if (a.gpu_time.period != PeriodKind::kRange && now >= a.window.end) {
    a.window = window_at(a.gpu_time, now, a.zone);
    a.spent = 0;
    new_window(a);
  }
  return a;
}

BudgetBook::Reservation BudgetBook::reserve(const Holder& h, int64_t want_ns, int64_t now) {
  Account& a = renewed(h, now);
  if (a.gpu_time.unlimited) {
    a.reserved += want_ns;
    return {true, want_ns};
  }
  int64_t left = a.window.contains(now) ? a.gpu_time.budget_ns - a.spent - a.reserved : 0;
  if (left <= 0) return {false, 0};
  if (leased_) {
    a.last_wanted = now;
    const int64_t lease = lease_left(a);
    if (lease <= 0) {
      if (a.exhausted) return {false, 0};
      a.wants = true;
      return {false, 0, true};
    }
    left = std::min(left, lease);
  }
  const int64_t grant = std::min(want_ns, left);
  a.reserved += grant;
  return {true, grant};
}

bool BudgetBook::settle(const Holder& h, int64_t reserved_ns, int64_t used_ns, int64_t now) {
  Account& a = renewed(h, now);
  const int64_t before = lease_left(a);
  a.reserved = std::max<int64_t>(0, a.reserved - reserved_ns);
  a.spent += used_ns;
  a.here += used_ns;
  if (!leased_ || a.limit < 0 || a.asked || a.exhausted) return false;
  const int64_t half = a.granted / 2, after = lease_left(a);
  return after < half && before + reserved_ns >= half;  // crossed it with this slice
}

BudgetState BudgetBook::state(const Holder& h, int64_t now) {
  const Account& a = renewed(h, now);
  BudgetState s;
  s.limited = !a.gpu_time.unlimited;
  s.budget_ns = a.gpu_time.budget_ns;
  s.spent_ns = a.spent;
  s.reserved_ns = a.reserved;
  s.window = a.window;
  s.open = !s.limited || a.window.contains(now);
  if (leased_ && s.limited) {
    s.lease_limit_ns = a.limit;
    s.here_ns = a.here;
  }
  return s;
}

std::vector<LeaseNeed> BudgetBook::lease_needs(int64_t now, const LeaseRules& rules,
                                               bool all_back) {
  std::vector<LeaseNeed> needs;
  if (!leased_) return needs;
  for (auto& [key, entry] : accounts_) {
    if (entry.gpu_time.unlimited || entry.asked) continue;
    Account& a = renewed(entry.holder, now);
    if (!a.window.contains(now) || (now < a.next_ask && !all_back)) continue;
    const bool in_use = !all_back && (a.reserved > 0 || now - a.last_wanted < rules.idle_return_s);
    const int64_t left = lease_left(a);
    LeaseRequest r;
    if (all_back && a.limit <= a.here) {
      continue;  // nothing unspent to give back
    } else if (a.wants && !a.exhausted && !all_back) {
      // Someone waits for time and the lease has none: take one.
    } else if (in_use && a.limit >= 0 && !a.exhausted &&
               (left < a.granted / 2 || now >= a.renew_at)) {
      // Half spent, or half its time to live gone: renew before it runs out.
    } else if (!in_use && a.limit > a.here) {
      // Idle with time unspent: give it back, and stop spending it now.
      r.give_back = true;
      a.limit = a.here;
    } else {
      continue;
    }
    r.student = a.holder.student;
    r.vm = a.holder.vm;
    r.window_start = a.window.start;
    r.window_end = a.window.end;
    r.budget_ns = a.gpu_time.budget_ns;
    r.used_ns = a.here;
    r.now = now;
    a.asked = true;
    a.wants = false;
    needs.push_back({a.holder, std::move(r)});
  }
  return needs;
}

void BudgetBook::lease_answer(const LeaseNeed& need, const LeaseGrant* grant, int64_t now,
                              const LeaseRules& rules) {
  auto it = accounts_.find(need.holder.key());
  if (it == accounts_.end()) return;
  Account& a = it->second;
  a.asked = false;
  if (a.window.start != need.request.window_start) return;  // a lease of a window gone by
  if (!grant) {
    a.next_ask = now + rules.retry_s;
    a.wants = a.wants || !need.request.give_back;
    return;
  }
  // The store counts more of this host's spending than the request did (it
  // ran before a restart, in this window): that is spent here too.
  a.here += std::max<int64_t>(0, grant->used_ns - need.request.used_ns);
  a.limit = grant->limit_ns;
  a.granted = std::max<int64_t>(0, grant->limit_ns - grant->used_ns);
  a.renew_at = now + std::max<int64_t>(1, rules.ttl_s / 2);
  a.spent = grant->spent_ns + std::max<int64_t>(0, a.here - grant->used_ns);
  a.exhausted = grant->exhausted && lease_left(a) <= 0;
  // Held by other hosts' leases for now: ask again later, not at once.
  a.next_ask = lease_left(a) > 0 || need.request.give_back ? 0 : now + rules.retry_s;
}

}  // namespace vgpu::policy
