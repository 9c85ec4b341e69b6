#include "engine_clock.h"

#include <time.h>

namespace vgpu::executor::sim {
namespace {
constexpr uint64_t kSpinNs = 50'000;  // spin for the last 50 us
}

uint64_t engine_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void engine_busy_until(uint64_t deadline_ns) {
  for (;;) {
    const uint64_t now = engine_now_ns();
    if (now >= deadline_ns) return;
    if (deadline_ns - now > kSpinNs) {
      const uint64_t wake = deadline_ns - kSpinNs;
      timespec ts{};
      ts.tv_sec = static_cast<time_t>(wake / 1'000'000'000ull);
      ts.tv_nsec = static_cast<long>(wake % 1'000'000'000ull);
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);  // EINTR: loop again
    }
  }
}

}  // namespace vgpu::executor::sim
