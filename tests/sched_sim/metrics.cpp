#include "metrics.h"

#include <algorithm>
#include <map>

namespace vgpu::sched_sim {

double jain(const std::vector<double>& x) {
  double sum = 0, squares = 0;
  for (double v : x) {
    sum += v;
    squares += v * v;
  }
  if (x.empty() || squares == 0) return 1.0;
  return sum * sum / (static_cast<double>(x.size()) * squares);
}

std::vector<double> entitled_shares(const std::vector<TenantParams>& params) {
  std::map<uint32_t, double> group_weight, member_weights;
  for (const TenantParams& p : params) {
    group_weight[p.group] = p.group_weight;  // the latest word wins, as in the policies
    member_weights[p.group] += p.weight;
  }
  double groups = 0;
  for (const auto& [g, w] : group_weight) groups += w;
  std::vector<double> out;
  out.reserve(params.size());
  for (const TenantParams& p : params) {
    out.push_back(group_weight[p.group] / groups * p.weight / member_weights[p.group]);
  }
  return out;
}

void ServiceTally::on_kernel(TenantId t, Nanos, Nanos length) {
  if (got_.size() <= t) got_.resize(t + 1, 0);
  got_[t] += length;
  total_ += length;
}

// --- WindowJain ---------------------------------------------------------------

WindowJain::WindowJain(Nanos start, Nanos length, std::vector<double> shares)
    : start_(start),
      length_(length),
      shares_(std::move(shares)),
      window_end_(start + length),
      in_window_(shares_.size(), 0.0),
      whole_(shares_.size(), 0.0) {}

void WindowJain::on_kernel(TenantId t, Nanos start, Nanos length) { add(t, start, start + length); }

void WindowJain::add(TenantId t, Nanos from, Nanos to) {
  from = std::max(from, start_);
  while (from < to) {
    while (from >= window_end_) close_window();
    const Nanos part = std::min(to, window_end_) - from;
    in_window_[t - 1] += static_cast<double>(part);
    whole_[t - 1] += static_cast<double>(part);
    from += part;
  }
}

void WindowJain::close_window() {
  bool any = false;
  std::vector<double> x;
  x.reserve(shares_.size());
  for (size_t i = 0; i < shares_.size(); ++i) {
    if (shares_[i] <= 0) continue;
    any |= in_window_[i] > 0;
    x.push_back(in_window_[i] / shares_[i]);
  }
  if (any) {  // a window where the GPU did nothing says nothing about fairness
    worst_ = std::min(worst_, jain(x));
    ++judged_;
  }
  std::fill(in_window_.begin(), in_window_.end(), 0.0);
  window_end_ += length_;
}

void WindowJain::on_end(Nanos now) {
  while (now >= window_end_) close_window();
}

double WindowJain::whole_run() const {
  std::vector<double> x;
  for (size_t i = 0; i < shares_.size(); ++i) {
    if (shares_[i] > 0) x.push_back(whole_[i] / shares_[i]);
  }
  return jain(x);
}

// --- LagTracker -------------------------------------------------------------------

void LagTracker::advance(Nanos now) {
  now = std::max(now, last_);  // an arrival seen after the kernel that started later
  if (active_groups_weight_ > 0) {
    top_ += static_cast<long double>(now - last_) / active_groups_weight_;
  }
  last_ = now;
}

void LagTracker::refresh(Group& g) {
  if (g.active_weight > 0) g.inner += g.weight * (top_ - g.top_seen) / g.active_weight;
  g.top_seen = top_;
}

long double LagTracker::ideal_now(const Tenant& t) const {
  if (!t.active) return t.ideal_base;
  const Group& g = groups_.at(t.group);
  const long double inner = g.inner + g.weight * (top_ - g.top_seen) / g.active_weight;
  return t.ideal_base + t.weight * (inner - t.inner_base);
}

void LagTracker::check(Tenant& t) {
  const auto lag = static_cast<Nanos>(ideal_now(t) - static_cast<long double>(t.service));
  t.max_lag = std::max(t.max_lag, lag);
  t.min_lag = std::min(t.min_lag, lag);
}

void LagTracker::on_join(TenantId id, const TenantParams& p, Nanos now) {
  advance(now);
  Group& g = groups_[p.group];
  if (g.active_weight == 0) g.weight = p.group_weight;
  Tenant& t = tenants_[id];
  t.group = p.group;
  t.weight = p.weight;
}

void LagTracker::on_active(TenantId id, Nanos now) {
  Tenant& t = tenants_.at(id);
  if (t.active) return;
  advance(now);
  Group& g = groups_.at(t.group);
  refresh(g);
  if (g.active_weight == 0) active_groups_weight_ += g.weight;
  g.active_weight += t.weight;
  t.inner_base = g.inner;
  t.active = true;
}

void LagTracker::on_idle(TenantId id, Nanos now) {
  Tenant& t = tenants_.at(id);
  if (!t.active) return;
  advance(now);
  check(t);
  Group& g = groups_.at(t.group);
  refresh(g);
  t.ideal_base = ideal_now(t);
  t.active = false;
  g.active_weight -= t.weight;
  if (g.active_weight == 0) active_groups_weight_ -= g.weight;
  const long double owed = t.ideal_base - static_cast<long double>(t.service);
  if (credit_ != kNever && owed > credit_) t.ideal_base = static_cast<long double>(t.service + credit_);
}

void LagTracker::on_leave(TenantId id, Nanos now) { on_idle(id, now); }

void LagTracker::on_kernel(TenantId id, Nanos start, Nanos length) {
  advance(start);
  Tenant& t = tenants_.at(id);
  check(t);
  t.service += length;
}

void LagTracker::on_end(Nanos now) {
  advance(now);
  for (auto& [id, t] : tenants_) check(t);
}

Nanos LagTracker::max_lag() const {
  Nanos m = 0;
  for (const auto& [id, t] : tenants_) m = std::max(m, t.max_lag);
  return m;
}

Nanos LagTracker::min_lag() const {
  Nanos m = 0;
  for (const auto& [id, t] : tenants_) m = std::min(m, t.min_lag);
  return m;
}

double LagTracker::ideal(TenantId id) const {
  return static_cast<double>(ideal_now(tenants_.at(id)));
}

// --- WindowCap -------------------------------------------------------------------

void WindowCap::on_kernel(TenantId t, Nanos start, Nanos length) {
  if (state_.size() < t) state_.resize(t);
  State& s = state_[t - 1];
  const double share = shares_[t - 1];
  // Best window ending with this kernel: it starts at some earlier kernel's
  // start a, so its excess is prefix_now - share*end - (prefix_before_a - share*a).
  s.least = std::min(s.least, s.prefix - share * static_cast<double>(start));
  s.prefix += static_cast<double>(length);
  s.worst = std::max(s.worst, s.prefix - share * static_cast<double>(start + length) - s.least);
}

double WindowCap::worst_excess() const {
  double w = -std::numeric_limits<double>::infinity();
  for (const State& s : state_) w = std::max(w, s.worst);
  return w;
}

}  // namespace vgpu::sched_sim
