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
    accounts_[h.key()] = Account{g, tz, w, ledger_(h, w), 0};
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
  }
  a.gpu_time = g;
  a.zone = tz;
}

BudgetBook::Account& BudgetBook::renewed(const Holder& h, int64_t now) {
  Account& a = accounts_[h.key()];
  // Day and week windows roll forward; a range stays what it is.
  if (a.gpu_time.period != PeriodKind::kRange && now >= a.window.end) {
    a.window = window_at(a.gpu_time, now, a.zone);
    a.spent = 0;
  }
  return a;
}

BudgetBook::Reservation BudgetBook::reserve(const Holder& h, int64_t want_ns, int64_t now) {
  Account& a = renewed(h, now);
  if (a.gpu_time.unlimited) {
    a.reserved += want_ns;
    return {true, want_ns};
  }
  const int64_t left = a.window.contains(now) ? a.gpu_time.budget_ns - a.spent - a.reserved : 0;
  if (left <= 0) return {false, 0};
  const int64_t grant = std::min(want_ns, left);
  a.reserved += grant;
  return {true, grant};
}

void BudgetBook::settle(const Holder& h, int64_t reserved_ns, int64_t used_ns, int64_t now) {
  Account& a = renewed(h, now);
  a.reserved = std::max<int64_t>(0, a.reserved - reserved_ns);
  a.spent += used_ns;
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
  return s;
}

}  // namespace vgpu::policy
