// How a waiter on either side of a ring polls before it sleeps: the guest
// library waiting for a reply, vgpud's loop waiting for requests, and its
// dispatcher waiting for work. One rule, so that the threads which hand work
// to each other keep the same rhythm.
#pragma once

#include <sched.h>

#include <chrono>

namespace vgpu::proto {

// How long a side polls before it sleeps on its doorbell. Polling answers a
// busy peer without a wake-up per message; sleeping keeps an idle side at zero
// CPU.
inline constexpr std::chrono::microseconds kPollBeforeSleep{50};

// How long a poller only pauses before it starts yielding the CPU between
// looks. A peer on another core answers a quick call within it; a peer that
// shares this core (fewer cores than busy threads: the program, vgpud's loop
// and its dispatcher) gets the core after it. Measured on 2 cores: with 5 µs
// a queued call took 15 µs (each hand-off waited out a pause), with 1 µs
// 5–7 µs, and an inline call stayed at 1.1–1.6 µs (docs/performance.md).
inline constexpr std::chrono::nanoseconds kPauseBeforeYield{1000};

// One step of a polling loop that has waited `waited` so far (the caller has
// just read the clock): a pause at first, then the CPU is yielded between
// checks. A poller that only paused would keep the thread that has the work
// to do off a shared core until the scheduler's next tick.
inline void poll_step(std::chrono::steady_clock::duration waited) {
  if (waited < kPauseBeforeYield) {
    __builtin_ia32_pause();
  } else {
    sched_yield();
  }
}

}  // namespace vgpu::proto
