// Decision cost: how long one scheduling decision (pick the next tenant, then
// charge it the measured time of the command it ran) takes, with 10 to
// 10,000 tenants that all have work. Prints p50 and p99 per policy and size,
// and the ratio of 1,000 tenants to 10 (logarithmic growth keeps it small).
//
//   policy_bench [--quick]     --quick: fewer decisions (a smoke test)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "rng.h"
#include "vgpu/scheduler/policy_factory.h"

using namespace vgpu;
using namespace vgpu::scheduler;
using Wall = std::chrono::steady_clock;

namespace {

struct Figures {
  double p50 = 0, p99 = 0;
};

// The cost of reading the clock twice, subtracted from each sample.
double timer_overhead() {
  std::vector<double> s(20000);
  for (double& v : s) {
    const auto a = Wall::now();
    const auto b = Wall::now();
    v = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
  }
  std::nth_element(s.begin(), s.begin() + static_cast<long>(s.size() / 2), s.end());
  return s[s.size() / 2];
}

Figures measure(const std::string& policy, uint32_t tenants, uint32_t courses, size_t decisions,
                double overhead) {
  std::unique_ptr<SchedulingPolicy> p;
  if (!make_policy(policy, PolicyOptions{}, &p).ok())
    std::abort();  // the bench names known policies
  sched_sim::Rng rng(tenants);
  for (TenantId t = 1; t <= tenants; ++t) {
    const uint32_t course = courses ? 1 + t % courses : 0;
    p->add_tenant(t, {static_cast<uint32_t>(1 + rng.next() % 8), course, 1 + course % 4}, 0);
    p->runnable(t, 0);
  }
  const sched_sim::KernelLengths lengths = sched_sim::KernelLengths::mixed();
  std::vector<Nanos> draws(4096);
  for (Nanos& d : draws) d = lengths.draw(rng);

  // Simulated time moves with the work, so fixed-share's caps open as they would.
  Nanos now = 0;
  auto decide = [&](size_t i) {
    Decision d = p->pick(now);
    if (d.kind == Decision::Kind::kWaitUntil) {
      now = d.until;
      d = p->pick(now);
    }
    const Nanos used = draws[i & 4095];
    now += used;
    p->charge(d.tenant, used, now);
  };
  for (size_t i = 0; i < std::max<size_t>(decisions / 4, 10u * tenants); ++i) decide(i);  // warm up

  std::vector<double> samples(decisions);
  for (size_t i = 0; i < decisions; ++i) {
    const auto a = Wall::now();
    decide(i);
    const auto b = Wall::now();
    samples[i] = std::max(
        0.0, static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count()) -
                 overhead);
  }
  std::sort(samples.begin(), samples.end());
  return {samples[samples.size() / 2], samples[samples.size() * 99 / 100]};
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const size_t decisions = quick ? 20000 : 1000000;
  const double overhead = timer_overhead();
  std::printf("Decision cost (pick + charge), %zu decisions per row; timer overhead %.0f ns "
              "subtracted\n\n",
              decisions, overhead);
  struct Row {
    const char* label;
    const char* policy;
    uint32_t courses;
  };
  const Row rows[] = {{"fair", "fair", 0},
                      {"fair, 10 courses", "fair", 10},
                      {"fixed-share", "fixed-share", 0},
                      {"best-effort", "best-effort", 0}};
  const uint32_t sizes[] = {10, 100, 1000, 10000};
  std::printf("%-18s %8s %10s %10s\n", "policy", "tenants", "p50 ns", "p99 ns");
  bool fine = true;
  for (const Row& row : rows) {
    Figures at[4];
    for (int i = 0; i < 4; ++i) {
      at[i] = measure(row.policy, sizes[i], row.courses, decisions, overhead);
      std::printf("%-18s %8u %10.0f %10.0f\n", row.label, sizes[i], at[i].p50, at[i].p99);
    }
    const double ratio = at[2].p50 / std::max(at[0].p50, 1.0);
    std::printf("%-18s p50 at 1,000 / at 10 = %.2fx (target <= 3x)\n\n", row.label, ratio);
    fine &= ratio > 0;
  }
  return fine ? 0 : 1;
}
