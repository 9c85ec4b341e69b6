// Basic scheduler vocabulary: tenants, time, and the injected clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace vgpu::scheduler {

using TenantId = uint32_t;
using Nanos = int64_t;  // nanoseconds, on the clock the scheduler was given

inline constexpr Nanos kMicrosecond = 1000;
inline constexpr Nanos kMillisecond = 1000 * kMicrosecond;
inline constexpr Nanos kSecond = 1000 * kMillisecond;

// Time is injected so policies can be driven by simulated time in tests.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual Nanos now() const = 0;
};

class SteadyClock final : public Clock {
 public:
  Nanos now() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace vgpu::scheduler
