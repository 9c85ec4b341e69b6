// The fair policy's guarantees, measured in simulation (tests/sched_sim):
// simulated tenants, non-preemptible kernels drawn lognormal between 10 us
// and 10 ms, deterministic seeds, the dispatcher's own turn protocol. Each
// threshold is the one the scheduling issue sets; docs/scheduling.md records
// the measured values.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>

#include "metrics.h"
#include "simulator.h"
#include "vgpu/scheduler/fair_policy.h"

using namespace vgpu;
using namespace vgpu::scheduler;
using namespace vgpu::sched_sim;

namespace {

constexpr Nanos kSlice = 2 * kMillisecond;
constexpr Nanos kLongest = 10 * kMillisecond;  // the longest kernel KernelLengths::mixed() draws

struct Run {
  FairPolicy policy{PolicyOptions{kSlice}};
  UnlimitedGate gate;
  Simulator sim;
  std::vector<TenantParams> params;  // by tenant id - 1

  explicit Run(uint64_t seed = 20240601) : sim(&policy, &gate, seed) {}

  TenantId add(const TenantParams& p) {
    TenantSpec spec;
    spec.params = p;
    return add(spec);
  }
  TenantId add(const TenantSpec& spec) {
    params.push_back(spec.params);
    return sim.add(spec);
  }
};

// Relative error of each tenant's share of all service against its entitlement.
double worst_share_error(const ServiceTally& got, const std::vector<double>& shares) {
  double worst = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    const double share = static_cast<double>(got.service(static_cast<TenantId>(i + 1))) /
                         static_cast<double>(got.total());
    worst = std::max(worst, std::abs(share - shares[i]) / shares[i]);
  }
  return worst;
}

}  // namespace

TEST_CASE("fair: 1000 always-busy tenants with equal weights get even shares in every window") {
  Run r;
  for (int i = 0; i < 1000; ++i) r.add(TenantSpec{});
  const std::vector<double> shares = entitled_shares(r.params);
  // The windows are 100 x the longest kernel of each tenant's entitled time
  // (virtual time): 1000 s of GPU time for 1000 tenants. A window of 100 x
  // the longest kernel of wall time (1 s) entitles each tenant to 1 ms, less
  // than one kernel that cannot be cut, so no scheduler can be even there;
  // that figure is reported below, not asserted.
  const Nanos window = static_cast<Nanos>(100.0 * kLongest / shares[0]);
  WindowJain per_window(0, window, shares);
  WindowJain wall_window(0, 100 * kLongest, shares);
  LagTracker lag;
  r.sim.observe(&per_window);
  r.sim.observe(&wall_window);
  r.sim.observe(&lag);
  r.sim.run(3 * window);
  r.sim.finish();

  INFO("windows " << per_window.windows() << ", worst " << per_window.worst() << ", run "
                  << per_window.whole_run() << "; wall-time 1 s windows: worst "
                  << wall_window.worst() << ", longest kernel " << r.sim.longest_kernel());
  REQUIRE(per_window.windows() == 3);
  CHECK(per_window.worst() >= 0.99);
  CHECK(per_window.whole_run() >= 0.999);
  CHECK(lag.max_lag() <= r.sim.longest_kernel() + kSlice);
  WARN("1000 tenants: Jain per virtual window " << per_window.worst() << ", over the run "
       << per_window.whole_run() << ", per 1 s wall window " << wall_window.worst()
       << "; max lag " << static_cast<double>(lag.max_lag()) / 1e6 << " ms");
}

TEST_CASE("fair: 10 tenants with equal weights are even in every 1 s window of wall time") {
  Run r;
  for (int i = 0; i < 10; ++i) r.add(TenantSpec{});
  const std::vector<double> shares = entitled_shares(r.params);
  WindowJain per_window(0, 100 * kLongest, shares);
  r.sim.observe(&per_window);
  r.sim.run(200 * kSecond);
  r.sim.finish();
  INFO("worst " << per_window.worst() << " over " << per_window.windows() << " windows");
  CHECK(per_window.windows() == 200);
  CHECK(per_window.worst() >= 0.99);
  CHECK(per_window.whole_run() >= 0.999);
  WARN("10 tenants: Jain per 1 s wall window " << per_window.worst() << ", over the run "
       << per_window.whole_run());
}

TEST_CASE("fair: weights 1:2:4:8 give shares within 2% of the weights") {
  Run r;
  for (uint32_t w : {1u, 2u, 4u, 8u}) r.add(TenantParams{w, 0, 1});
  ServiceTally got;
  r.sim.observe(&got);
  r.sim.run(100 * kSecond);
  const std::vector<double> shares = entitled_shares(r.params);
  for (TenantId t = 1; t <= 4; ++t) {
    INFO("tenant " << t << " got " << static_cast<double>(got.service(t)) / static_cast<double>(got.total())
                   << ", entitled " << shares[t - 1]);
  }
  CHECK(worst_share_error(got, shares) <= 0.02);
  WARN("weights 1:2:4:8: worst share error " << worst_share_error(got, shares) * 100 << "%");
}

TEST_CASE("fair: random weights give shares within 2% of the weights") {
  Run r;
  Rng rng(7);
  for (int i = 0; i < 100; ++i) {
    r.add(TenantParams{static_cast<uint32_t>(1 + rng.next() % 20), 0, 1});
  }
  ServiceTally got;
  r.sim.observe(&got);
  // Long enough that the smallest tenant's share is many turns.
  r.sim.run(1000 * kSecond);
  const std::vector<double> shares = entitled_shares(r.params);
  CHECK(worst_share_error(got, shares) <= 0.02);
  WARN("100 tenants, random weights 1-20: worst share error " << worst_share_error(got, shares) * 100
       << "%");
}

TEST_CASE("fair: 10 courses x 100 students split each course's share among its students") {
  Run r;
  Rng rng(11);
  for (uint32_t course = 1; course <= 10; ++course) {
    for (int s = 0; s < 100; ++s) {
      // Unequal courses (weights 1..10), unequal students (1..4) inside each.
      r.add(TenantParams{static_cast<uint32_t>(1 + rng.next() % 4), course, course});
    }
  }
  ServiceTally got;
  r.sim.observe(&got);
  r.sim.run(3000 * kSecond);
  const std::vector<double> shares = entitled_shares(r.params);
  double course_error = 0;
  for (uint32_t course = 1; course <= 10; ++course) {
    double entitled = 0, received = 0;
    for (size_t i = 0; i < r.params.size(); ++i) {
      if (r.params[i].group != course) continue;
      entitled += shares[i];
      received += static_cast<double>(got.service(static_cast<TenantId>(i + 1)));
    }
    received /= static_cast<double>(got.total());
    course_error = std::max(course_error, std::abs(received - entitled) / entitled);
  }
  const double student_error = worst_share_error(got, shares);
  CHECK(course_error <= 0.02);
  CHECK(student_error <= 0.05);
  WARN("hierarchy 10 x 100: worst course error " << course_error * 100 << "%, worst student error "
       << student_error * 100 << "%");
}

namespace {

TenantSpec spec(TenantParams params, KernelLengths kernels, Arrivals arrivals = Arrivals::always_busy(),
                Nanos join_at = 0, Nanos leave_at = kNever) {
  TenantSpec s;
  s.params = params;
  s.kernels = kernels;
  s.arrivals = arrivals;
  s.join_at = join_at;
  s.leave_at = leave_at;
  return s;
}

// The adversarial mix: steady tenants of several weights, one that runs
// only 10 ms kernels, one that floods 5 us calls, bursts, an interactive
// tenant, and tenants joining and leaving mid-run.
void add_adversaries(Run& r, uint32_t group_a, uint32_t group_b) {
  const KernelLengths mixed = KernelLengths::mixed();
  for (uint32_t w : {1u, 1u, 2u, 4u, 8u}) r.add(spec({w, group_a, 3}, mixed));
  r.add(spec({1, group_a, 3}, KernelLengths::fixed(kLongest)));
  r.add(spec({1, group_b, 1}, KernelLengths::uniform(5 * kMicrosecond, 20 * kMicrosecond)));
  r.add(spec({2, group_b, 1}, mixed, Arrivals::bursts(40, 300 * kMillisecond)));
  r.add(spec({1, group_b, 1}, mixed, Arrivals::synchronous(50 * kMicrosecond)));
  for (int i = 0; i < 4; ++i) {
    const Nanos join = (5 + 7 * i) * kSecond;
    r.add(spec({static_cast<uint32_t>(1 + i), i % 2 ? group_a : group_b, i % 2 ? 3u : 1u}, mixed,
               Arrivals::always_busy(), join, join + 9 * kSecond));
  }
}

}  // namespace

TEST_CASE("fair: no tenant falls behind its ideal share by more than a kernel and a slice") {
  // Ideal share: every active tenant served at once in proportion to its
  // weight. A tenant that goes idle keeps at most one slice of what it was
  // owed, the credit bound the policy applies (so the ideal forgets the rest
  // too). Several seeds: the bound must hold for each.
  for (uint64_t seed : {1u, 2u, 3u}) {
    Run r(seed);
    add_adversaries(r, 0, 0);
    LagTracker lag(kSlice);
    r.sim.observe(&lag);
    r.sim.run(40 * kSecond);
    r.sim.finish();
    INFO("seed " << seed);
    CHECK(lag.max_lag() <= r.sim.longest_kernel() + kSlice);
    WARN("adversarial mix, seed " << seed << ": max lag " << static_cast<double>(lag.max_lag()) / 1e6
         << " ms (bound " << static_cast<double>(r.sim.longest_kernel() + kSlice) / 1e6 << " ms)");
  }
}

TEST_CASE("fair: in a hierarchy, lag stays within the two levels' bounds") {
  // Each level is its own EEVDF queue, so a student's lag is its lag inside
  // its course plus its part of its course's lag among courses: each within a
  // kernel and a slice, together within twice that. (Measured values are in
  // docs/scheduling.md; they usually stay under the single bound.)
  for (uint64_t seed : {1u, 2u, 3u}) {
    Run r(seed);
    add_adversaries(r, 1, 2);
    LagTracker lag(kSlice);
    r.sim.observe(&lag);
    r.sim.run(40 * kSecond);
    r.sim.finish();
    INFO("seed " << seed);
    CHECK(lag.max_lag() <= 2 * (r.sim.longest_kernel() + kSlice));
    WARN("adversarial mix in two courses, seed " << seed << ": max lag "
         << static_cast<double>(lag.max_lag()) / 1e6 << " ms");
  }
}

TEST_CASE("fair: an overrun is paid back") {
  // One tenant's kernels are 10 ms, five times the slice; the other's 100 us.
  Run r;
  r.add(spec({1, 0, 1}, KernelLengths::fixed(kLongest)));
  r.add(spec({1, 0, 1}, KernelLengths::fixed(100 * kMicrosecond)));
  ServiceTally got;
  r.sim.observe(&got);
  r.sim.run(60 * kSecond);
  CHECK(worst_share_error(got, entitled_shares(r.params)) <= 0.02);
}

TEST_CASE("fair: a tenant flooding tiny calls leaves its neighbour its entitled time") {
  // Tiny next to the 2 ms slice and the victim's kernels (10 us to 10 ms).
  const KernelLengths tiny = KernelLengths::uniform(5 * kMicrosecond, 20 * kMicrosecond);
  SECTION("an interactive victim: one kernel at a time, 50 us between them") {
    Run r;
    const TenantId victim =
        r.add(spec({1, 0, 1}, KernelLengths::mixed(), Arrivals::synchronous(50 * kMicrosecond)));
    r.add(spec({1, 0, 1}, tiny));
    LagTracker entitled;  // GPS share over the time the victim had work
    r.sim.observe(&entitled);
    r.sim.run(10 * kSecond);
    r.sim.finish();
    const double ratio = static_cast<double>(entitled.service(victim)) / entitled.ideal(victim);
    CHECK(ratio >= 0.95);
    WARN("flood vs interactive victim: victim got " << ratio * 100 << "% of its entitled time");
  }
  SECTION("a busy victim") {
    Run r;
    const TenantId victim = r.add(spec({1, 0, 1}, KernelLengths::mixed()));
    r.add(spec({1, 0, 1}, tiny));
    LagTracker entitled;
    r.sim.observe(&entitled);
    r.sim.run(10 * kSecond);
    r.sim.finish();
    const double ratio = static_cast<double>(entitled.service(victim)) / entitled.ideal(victim);
    CHECK(ratio >= 0.95);
    WARN("flood vs busy victim: victim got " << ratio * 100 << "% of its entitled time");
  }
}

namespace {

// Shares of two programs weighted 1 and 3 that each launch `batch` kernels
// of `kernel` ns, wait for them, and are idle for `round_trip` ns before the
// next batch.
std::pair<double, double> closed_loop_shares(uint32_t batch, Nanos kernel, Nanos round_trip,
                                             uint64_t seed) {
  Run r(seed);
  const KernelLengths k = KernelLengths::fixed(kernel);
  r.add(spec({1, 0, 1}, k, Arrivals::closed_loop(batch, round_trip)));
  r.add(spec({3, 0, 1}, k, Arrivals::closed_loop(batch, round_trip)));
  ServiceTally got;
  r.sim.observe(&got);
  r.sim.run(20 * kSecond);
  const double a = static_cast<double>(got.service(1)), b = static_cast<double>(got.service(2));
  return {a / (a + b), b / (a + b)};
}

}  // namespace

TEST_CASE("fair: programs that synchronize after every few kernels get their weights") {
  // The VM is idle for its round trip after each batch, and the neighbour's
  // kernel that fills that gap delays its next batch: it is owed its share of
  // that kernel from the moment its batch came (turn.h).
  SECTION("batches of 4 kernels of 1 ms: within 10% of the weights") {
    const auto [light, heavy] = closed_loop_shares(4, kMillisecond, 50 * kMicrosecond, 1);
    WARN("closed loop 1:3, batches of 4 x 1 ms: " << light * 100 << "% : " << heavy * 100 << "%");
    CHECK(std::abs(heavy - 0.75) / 0.75 <= 0.10);
    CHECK(std::abs(light - 0.25) / 0.25 <= 0.10);
  }
  SECTION("shorter batches: within 10% of what the round trips allow") {
    // During each round trip the lighter program's next kernel starts (the
    // GPU does not idle while someone has work), so a program that waits
    // after every n kernels gets at most n / (n + 1) of the GPU next to one
    // that always has a kernel ready.
    for (uint32_t batch : {1u, 2u, 4u}) {
      for (Nanos kernel : {100 * kMicrosecond, kMillisecond}) {
        const auto [light, heavy] = closed_loop_shares(batch, kernel, 50 * kMicrosecond, 1);
        const double bound = std::min(0.75, batch / (batch + 1.0));
        WARN("closed loop 1:3, batches of " << batch << " x " << kernel / 1000 << " us: heavy "
             << heavy * 100 << "% (entitled 75%, at most " << bound * 100 << "% possible)");
        CHECK(heavy >= 0.9 * bound);
      }
    }
  }
}

TEST_CASE("fair: programs that wait for each kernel are not starved by busy neighbours") {
  // Two programs that run one kernel at a time (50 us between them) next to
  // two that always have work, equal weights, kernels of the mixed lengths:
  // the waiting ones are owed service from when each kernel is submitted.
  for (uint64_t seed : {1u, 2u}) {
    Run r(seed);
    r.add(spec({1, 0, 1}, KernelLengths::mixed()));
    r.add(spec({1, 0, 1}, KernelLengths::uniform(5 * kMicrosecond, 20 * kMicrosecond)));
    r.add(spec({1, 0, 1}, KernelLengths::mixed(), Arrivals::synchronous(50 * kMicrosecond)));
    r.add(spec({1, 0, 1}, KernelLengths::mixed(), Arrivals::synchronous(50 * kMicrosecond)));
    ServiceTally got;
    r.sim.observe(&got);
    r.sim.run(40 * kSecond);
    const double total = static_cast<double>(got.total());
    for (TenantId t = 3; t <= 4; ++t) {
      const double share = static_cast<double>(got.service(t)) / total;
      INFO("seed " << seed << " tenant " << t << " share " << share);
      CHECK(share >= 0.25 * 0.95);
      WARN("one kernel at a time next to busy tenants, seed " << seed << ": " << share * 100
           << "% (entitled 25%)");
    }
  }
}

TEST_CASE("fair: students who come and go leave their course its share") {
  // Two courses (weights 3 and 1), each with a busy student and one who runs
  // one kernel at a time; the second course's busy student floods tiny calls.
  // What a student takes along when it goes idle, and brings back, is shared
  // by everyone by share, not traded with the other course alone.
  for (uint64_t seed : {1u, 2u}) {
    Run r(seed);
    const KernelLengths mixed = KernelLengths::mixed();
    r.add(spec({1, 1, 3}, mixed));
    r.add(spec({1, 1, 3}, mixed, Arrivals::synchronous(50 * kMicrosecond)));
    r.add(spec({1, 2, 1}, KernelLengths::uniform(5 * kMicrosecond, 20 * kMicrosecond)));
    r.add(spec({1, 2, 1}, mixed, Arrivals::synchronous(50 * kMicrosecond)));
    ServiceTally got;
    r.sim.observe(&got);
    r.sim.run(40 * kSecond);
    const double second = static_cast<double>(got.service(3) + got.service(4)) /
                          static_cast<double>(got.total());
    INFO("seed " << seed << ": second course " << second);
    CHECK(std::abs(second - 0.25) / 0.25 <= 0.05);
    WARN("courses 3:1 with students coming and going, seed " << seed << ": second course "
         << second * 100 << "% (entitled 25%)");
  }
}
