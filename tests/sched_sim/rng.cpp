#include "rng.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace vgpu::sched_sim {
namespace {

uint64_t splitmix64(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(uint64_t seed) {
  for (auto& s : s_) s = splitmix64(&seed);
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }

double Rng::normal() {
  const double u1 = uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

KernelLengths KernelLengths::mixed() {
  const Nanos lo = 10 * scheduler::kMicrosecond, hi = 10 * scheduler::kMillisecond;
  const double median = std::sqrt(static_cast<double>(lo) * static_cast<double>(hi));
  const double sigma = std::log(static_cast<double>(hi) / median) / 3.0;
  return lognormal(static_cast<Nanos>(median), sigma, lo, hi);
}

Nanos KernelLengths::draw(Rng& rng) const {
  switch (kind) {
    case Kind::kFixed:
      return a;
    case Kind::kUniform:
      return a + static_cast<Nanos>(rng.uniform() * static_cast<double>(max - a + 1));
    case Kind::kLogNormal: {
      const double x = static_cast<double>(a) * std::exp(sigma * rng.normal());
      return std::clamp(static_cast<Nanos>(x), min, max);
    }
  }
  return a;
}

}  // namespace vgpu::sched_sim
