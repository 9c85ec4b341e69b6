// The engine's clock: monotonic nanoseconds, and holding the engine busy
// until a deadline (sleep first, spin for the last stretch so a modeled
// duration is met closely without burning a core for long ones).
#pragma once

#include <cstdint>

namespace vgpu::executor::sim {

uint64_t engine_now_ns();

// Returns once engine_now_ns() >= deadline_ns.
void engine_busy_until(uint64_t deadline_ns);

}  // namespace vgpu::executor::sim
