// A small, fast, seedable random source (splitmix64 seeding xoshiro256**),
// and the kernel-length draws the simulations use. Written out rather than
// taken from <random> so a seed gives the same run with any standard library.
#pragma once

#include <cstdint>

#include "vgpu/scheduler/types.h"

namespace vgpu::sched_sim {

using scheduler::Nanos;

class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  double uniform();  // in (0, 1)
  double normal();   // standard normal (Box-Muller)

 private:
  uint64_t s_[4];
};

// How long a tenant's kernels take.
struct KernelLengths {
  enum class Kind { kFixed, kLogNormal, kUniform };
  Kind kind = Kind::kFixed;
  Nanos a = 0;        // fixed: the length; lognormal: the median; uniform: the least
  double sigma = 0;   // lognormal: the sigma of ln(length)
  Nanos min = 0;      // lognormal: clamped to [min, max]; uniform: [a, max]
  Nanos max = 0;

  static KernelLengths fixed(Nanos length) { return {Kind::kFixed, length, 0, length, length}; }
  static KernelLengths lognormal(Nanos median, double sigma, Nanos min, Nanos max) {
    return {Kind::kLogNormal, median, sigma, min, max};
  }
  static KernelLengths uniform(Nanos least, Nanos most) {
    return {Kind::kUniform, least, 0, least, most};
  }
  // The mix: lognormal between 10 us and 10 ms (median ~316 us, the
  // geometric middle; 3 sigma reach either end).
  static KernelLengths mixed();

  Nanos draw(Rng& rng) const;
  Nanos longest() const { return max; }
};

}  // namespace vgpu::sched_sim
