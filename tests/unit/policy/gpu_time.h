// A limited GPU-time quota of `budget_ns` per period, for the policy tests.
#pragma once

#include <cstdint>

#include "vgpu/policy/quota.h"

namespace vgpu::policy::test {

inline GpuTime per(int64_t budget_ns, PeriodKind p) {
  GpuTime g;
  g.unlimited = false;
  g.budget_ns = budget_ns;
  g.period = p;
  return g;
}

}  // namespace vgpu::policy::test
