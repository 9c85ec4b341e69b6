// What the guarantee tests measure, gathered as the simulation runs (memory
// O(tenants), not O(kernels), so million-kernel runs stay cheap).
//
//   ServiceTally  GPU time each tenant received.
//   WindowJain    Jain's fairness index of entitlement-normalised service,
//                 per window of fixed length and over the whole run.
//   LagTracker    each tenant's lag behind its ideal share (GPS: every
//                 active tenant served at once in proportion to its weight,
//                 course then student), and its largest value over the run.
//   WindowCap     for each tenant, the most its service in any window
//                 exceeded share * window length.
#pragma once

#include <limits>
#include <unordered_map>
#include <vector>

#include "simulator.h"

namespace vgpu::sched_sim {

// Jain's index of x: (sum x)^2 / (n * sum x^2); 1 is perfectly even.
double jain(const std::vector<double>& x);

// Each tenant's entitled fraction of the GPU when all of `params` are busy:
// group_weight / sum of group weights * weight / sum of weights in the group.
// Indexed like `params` (tenant id - 1 when ids come from Simulator::add).
std::vector<double> entitled_shares(const std::vector<TenantParams>& params);

class ServiceTally final : public Observer {
 public:
  void on_kernel(TenantId t, Nanos, Nanos length) override;
  Nanos service(TenantId t) const { return t < got_.size() ? got_[t] : 0; }
  Nanos total() const { return total_; }

 private:
  std::vector<Nanos> got_;  // by tenant id
  Nanos total_ = 0;
};

// Windows [start + k*length, start + (k+1)*length); a kernel that straddles a
// boundary counts in each window for the part that falls in it. Windows not
// wholly inside the run are not judged. x_i = service_i / share_i over the
// tenants in `shares` (by id - 1).
class WindowJain final : public Observer {
 public:
  WindowJain(Nanos start, Nanos length, std::vector<double> shares);
  void on_kernel(TenantId t, Nanos start, Nanos length) override;
  void on_end(Nanos now) override;

  double worst() const { return worst_; }
  size_t windows() const { return judged_; }
  double whole_run() const;

 private:
  void add(TenantId t, Nanos from, Nanos to);
  void close_window();

  Nanos start_, length_;
  std::vector<double> shares_;
  Nanos window_end_;
  std::vector<double> in_window_, whole_;
  double worst_ = 1.0;
  size_t judged_ = 0;
};

class LagTracker final : public Observer {
 public:
  // An idle tenant keeps at most `credit` of the service it was owed (the
  // policies' documented bound on banked credit; kNever: keep all of it).
  explicit LagTracker(Nanos credit = kNever) : credit_(credit) {}

  void on_join(TenantId t, const TenantParams& p, Nanos now) override;
  void on_leave(TenantId t, Nanos now) override;
  void on_active(TenantId t, Nanos now) override;
  void on_idle(TenantId t, Nanos now) override;
  void on_kernel(TenantId t, Nanos start, Nanos length) override;
  void on_end(Nanos now) override;

  Nanos max_lag(TenantId t) const { return tenants_.at(t).max_lag; }
  Nanos max_lag() const;                 // over all tenants
  Nanos min_lag() const;                 // most ahead of its share (negative)
  double ideal(TenantId t) const;        // GPU time it was entitled to so far
  Nanos service(TenantId t) const { return tenants_.at(t).service; }

 private:
  struct Group {
    uint32_t weight = 1;
    double active_weight = 0;  // sum of its active tenants' weights
    long double inner = 0;     // virtual time inside the group
    long double top_seen = 0;  // top_ when inner was last brought up to date
  };
  struct Tenant {
    uint32_t group = 0;
    double weight = 1;
    bool active = false;
    long double ideal_base = 0;  // ideal service when inner_base was taken
    long double inner_base = 0;
    Nanos service = 0;
    Nanos max_lag = 0;
    Nanos min_lag = 0;
  };

  void advance(Nanos now);
  void refresh(Group& g);
  long double ideal_now(const Tenant& t) const;
  void check(Tenant& t);

  Nanos credit_;
  Nanos last_ = 0;
  long double top_ = 0;        // virtual time among groups
  double active_groups_weight_ = 0;
  std::unordered_map<uint32_t, Group> groups_;
  std::unordered_map<TenantId, Tenant> tenants_;
};

class WindowCap final : public Observer {
 public:
  explicit WindowCap(std::vector<double> shares) : shares_(std::move(shares)) {}
  void on_kernel(TenantId t, Nanos start, Nanos length) override;
  // Largest (service in [a, b]) - share * (b - a) over all windows [a, b].
  double worst_excess(TenantId t) const { return t - 1 < state_.size() ? state_[t - 1].worst : 0; }
  double worst_excess() const;

 private:
  struct State {
    double prefix = 0;  // service so far
    double least = std::numeric_limits<double>::infinity();  // min of prefix_before - share*start
    double worst = -std::numeric_limits<double>::infinity();
  };
  std::vector<double> shares_;
  std::vector<State> state_;
};

}  // namespace vgpu::sched_sim
