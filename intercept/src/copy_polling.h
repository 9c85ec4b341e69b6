// How long a program waiting for a reply polls before it sleeps, given the
// bytes its copies through the data area still have in flight. The next
// reply is usually one of those copies finishing: polling about as long as
// they should take (at 4 GB/s) finds it awake. A reply that finds the program
// asleep costs vgpud a doorbell ring (on a VM whose idle vCPU halts, ~20 µs
// of the thread that rings it) and the program a wake-up.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "vgpu/transport/doorbell.h"

namespace vgpu::intercept {

// The longest a waiter polls, however much is in flight: past it, sleeping
// costs less than the CPU polling would burn.
inline constexpr std::chrono::microseconds kMaxCopyPoll{1000};

inline std::chrono::microseconds poll_for_copies(uint64_t bytes_in_flight) {
  const auto expected = std::chrono::microseconds(bytes_in_flight / 4000);  // 4000 bytes a µs
  return std::min(transport::kPollBeforeSleep + expected, kMaxCopyPoll);
}

}  // namespace vgpu::intercept
