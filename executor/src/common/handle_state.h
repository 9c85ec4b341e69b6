// The life of a stream, event, texture or module handle in a context's tables
// (shared by both backends).
#pragma once

#include <cstdint>

namespace vgpu::executor::common {

// Where a stream, event, texture or module is in its life, in the daemon's
// tables:
//   kPending -> kLive   made in the tables, then the worker has it (cuda
//                       backend: an event, a module and its variables)
//   kLive -> kGoing     its destruction (or unload) is queued: no new work
//                       may name it
//   kGoing -> kLive     that destruction was discarded unexecuted
// It is erased once the destruction executes. Only kLive handles are usable.
enum class HandleState : uint8_t { kPending, kLive, kGoing };

}  // namespace vgpu::executor::common
