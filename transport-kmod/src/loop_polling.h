// When the host loop, with nothing to read, keeps polling instead of sleeping
// on its doorbells. Pure functions, so the rule is tested without timing.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

#include "vgpu/protocol/wire_header.h"
#include "vgpu/transport/doorbell.h"

namespace vgpu::transport {

// How long the loop keeps polling while an answer is owed: a request that
// wants one was read after the last reply written, so its program is waiting
// for queued work and will send again as soon as the answer lands. The same
// bound as a program's own poll for a copy. Without it the loop slept in the
// middle of a 1 MiB copy (~50 µs) and a quarter of the next requests had to
// wake it.
inline constexpr std::chrono::microseconds kPollWhileOwed{1000};

// Whether the guest waits for an answer to `message` (a quiet one, such as an
// asynchronous launch, is answered only if it fails).
inline bool wants_reply(std::span<const uint8_t> message) {
  vgpu_msg_header h;
  if (message.size() < sizeof h) return false;
  std::memcpy(&h, message.data(), sizeof h);
  return (h.flags & VGPU_MSG_QUIET) == 0;
}

struct LoopActivity {
  std::chrono::steady_clock::time_point worked;   // the last pass that read requests
  std::chrono::steady_clock::time_point read;     // the last request that wants an answer
  std::chrono::steady_clock::time_point replied;  // the last reply written, by any thread
};

// How long the loop has polled so far, or nothing once it should sleep.
// Polling restarts at each reply too: the program that got it usually sends
// its next request at once.
inline std::optional<std::chrono::steady_clock::duration> polled_so_far(
    const LoopActivity& a, std::chrono::steady_clock::time_point now) {
  const bool owed = a.replied < a.read;
  const auto since = std::max(a.worked, a.replied);
  const auto waited = now - since;
  if (waited < (owed ? kPollWhileOwed : kPollBeforeSleep)) return waited;
  return std::nullopt;
}

}  // namespace vgpu::transport
