// How long each VM's calls took as vgpud saw them, from reading a request to
// sending its answer, as histograms for the metrics
// (vgpu_vm_call_duration_seconds). Two kinds: immediate calls (queries,
// allocations, module loads) and queued work the guest waits for
// (synchronize, copies, frees), whose time includes the wait for its turn on
// the GPU. Work sent quiet (asynchronous launches and copies, answered only
// on failure) is not timed: nobody waits for its reply.
//
// Threads: record() on the transport thread (immediate calls) and the
// dispatcher thread (queued work); snapshot() on the metrics thread. One
// mutex, held for a bucket increment.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>

#include "vgpu/scheduler/types.h"

namespace vgpu::host {

enum class CallKind : uint8_t { kImmediate, kQueued };
inline constexpr int kCallKinds = 2;
const char* call_kind_name(CallKind kind);  // "immediate", "queued"

// Upper bounds of the buckets, in seconds: 10 µs (a round trip on one host is
// a few µs) to 10 s (a module load, a long synchronize); +Inf beyond.
inline constexpr std::array<double, 16> kLatencyBounds = {
    10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3,
    5e-3,  10e-3, 25e-3, 50e-3,  100e-3, 250e-3, 1.0,  10.0};

struct LatencyHistogram {
  std::array<uint64_t, kLatencyBounds.size() + 1> counts{};  // per bucket, the last is +Inf
  uint64_t count = 0;
  uint64_t sum_ns = 0;
};

using TenantLatency = std::array<LatencyHistogram, kCallKinds>;

class CallLatency {
 public:
  void record(scheduler::TenantId tenant, CallKind kind, uint64_t ns);
  std::map<scheduler::TenantId, TenantLatency> snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<scheduler::TenantId, TenantLatency> tenants_;  // guarded by mu_
};

// The steady clock in ns, as ReplyTo::received_ns holds it.
uint64_t steady_now_ns();

}  // namespace vgpu::host
