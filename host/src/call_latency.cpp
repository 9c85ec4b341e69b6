#include "vgpu/host/call_latency.h"

#include <algorithm>
#include <chrono>

namespace vgpu::host {

const char* call_kind_name(CallKind kind) {
  return kind == CallKind::kImmediate ? "immediate" : "queued";
}

void CallLatency::record(scheduler::TenantId tenant, CallKind kind, uint64_t ns) {
  const double seconds = static_cast<double>(ns) / 1e9;
  // The first bound at or above the value (Prometheus's `le`); past the last, +Inf.
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(kLatencyBounds.begin(), kLatencyBounds.end(), seconds) -
      kLatencyBounds.begin());
  std::lock_guard lock(mu_);
  LatencyHistogram& h = tenants_[tenant][static_cast<size_t>(kind)];
  ++h.counts[bucket];
  ++h.count;
  h.sum_ns += ns;
}

std::map<scheduler::TenantId, TenantLatency> CallLatency::snapshot() const {
  std::lock_guard lock(mu_);
  return tenants_;
}

uint64_t steady_now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace vgpu::host
