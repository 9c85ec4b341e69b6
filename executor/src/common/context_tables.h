// The tables every backend's context keeps for its guest (streams, events,
// modules, functions and the sticky fault) and the rules both backends apply
// to them: the bounds, how a handle is made, which stream a call names, and
// what a work item leaves on the tables when it is accepted, and when it has
// run or been discarded. Shared so that a guest meets the same rules whichever
// backend serves it; only what an entry holds differs (template parameters).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <random>
#include <unordered_map>
#include <variant>

#include "handle_state.h"
#include "vgpu/executor/backend.h"
#include "work_check.h"

namespace vgpu::executor::common {

// Per-context bounds on what a guest can make the daemon keep.
inline constexpr size_t kMaxStreams = 4096;
inline constexpr size_t kMaxEvents = 65536;
inline constexpr size_t kMaxModules = 1024;
inline constexpr size_t kMaxAllocations = 1 << 20;
inline constexpr size_t kMaxTextures = 65536;  // texture and surface objects

// The flags of cudaStreamCreateWithFlags and cudaEventCreateWithFlags.
inline constexpr uint32_t kStreamNonBlocking = 0x1;   // cudaStreamNonBlocking
inline constexpr uint32_t kEventFlagsKnown = 0x7;     // BlockingSync | DisableTiming | Interprocess
inline constexpr uint32_t kEventDisableTiming = 0x2;  // cudaEventDisableTiming
inline constexpr uint32_t kEventInterprocess = 0x4;   // cudaEventInterprocess

// What cudaEventCreateWithFlags accepts: known flags, and an interprocess
// event only without timing.
inline bool valid_event_flags(uint32_t flags) {
  if ((flags & ~kEventFlagsKnown) != 0) return false;
  return !(flags & kEventInterprocess) || (flags & kEventDisableTiming);
}

// Work pending on a stream: accept() adds, execute()/discard() take.
struct StreamState {
  uint32_t flags = 0;
  int32_t priority = 0;
  uint64_t pending = 0;
  HandleState state = HandleState::kLive;
};

// A texture or surface object: its checked description.
struct TextureState {
  TextureDesc desc;
  HandleState state = HandleState::kLive;
};

// Guarded by the owning context's `mu`.
template <class Event, class Module, class Function>
struct ContextTables {
  explicit ContextTables(uint64_t seed) : rng(seed) {}

  Status fault = Status::kSuccess;  // sticky: every call returns it until Reset
  void set_fault(Status s) {
    if (ok(fault)) fault = s;
  }
  StreamState default_stream;
  std::unordered_map<Handle, StreamState> streams;
  std::unordered_map<Handle, Event> events;
  std::unordered_map<Handle, Module> modules;
  std::unordered_map<Handle, Function> functions;
  std::unordered_map<Handle, TextureState> textures;
  std::mt19937_64 rng;

  // A fresh handle: random (so other contexts' handles are not guessable),
  // never 0, 1 or 2, unused by any table of this context.
  Handle new_handle() {
    for (;;) {
      const Handle h = rng();
      if (h > 2 && !streams.count(h) && !events.count(h) && !modules.count(h) &&
          !functions.count(h) && !textures.count(h)) {
        return h;
      }
    }
  }
  // The stream a work item or call names: 0, 1 (legacy) and 2 (per-thread)
  // are the default stream. nullptr if unknown.
  StreamState* stream(Handle h) {
    if (h <= 2) return &default_stream;
    auto it = streams.find(h);
    return it == streams.end() ? nullptr : &it->second;
  }
};

// accept(): a faulted context takes only a Reset (how it recovers); the
// stream must be the context's and not being destroyed; then check_work.
// Counts the work on its stream. Called with ctx.mu held.
template <class Ctx, class LaunchLimits>
Status accept_work(Ctx& ctx, const Work& work, LaunchLimits&& launch_limits) {
  if (!ok(ctx.fault) && !std::holds_alternative<Reset>(work.op)) return ctx.fault;
  StreamState* stream = ctx.stream(work.stream);
  if (!stream || stream->state != HandleState::kLive) return Status::kInvalidResourceHandle;
  const Status st = check_work(ctx, work.op, launch_limits);
  if (!ok(st)) return st;
  ++stream->pending;
  return Status::kSuccess;
}

// What accept() marked, undone once the work ran (`executed`) or was
// discarded: its stream's and event's pending counts, and the destroy marks of
// work that did not run. A Free is the backend's to settle (whether the memory
// is gone differs). Called with ctx.mu held.
template <class Ctx>
void settle_tables(Ctx& ctx, const Work& work, bool executed) {
  if (StreamState* s = ctx.stream(work.stream); s && s->pending > 0) --s->pending;
  std::visit(Overloaded{
                 [&](const RecordEvent& r) {
                   auto e = ctx.events.find(r.event);
                   if (e != ctx.events.end() && e->second.pending > 0) --e->second.pending;
                 },
                 [&](const DestroyStream& d) {
                   auto s = ctx.streams.find(d.stream);
                   if (s != ctx.streams.end() && !executed) s->second.state = HandleState::kLive;
                 },
                 [&](const DestroyEvent& d) {
                   auto e = ctx.events.find(d.event);
                   if (e != ctx.events.end() && !executed) e->second.state = HandleState::kLive;
                 },
                 [&](const DestroyTexture& d) {
                   auto t = ctx.textures.find(d.texture);
                   if (t != ctx.textures.end() && !executed) t->second.state = HandleState::kLive;
                 },
                 [&](const UnloadModule& u) {
                   auto m = ctx.modules.find(u.module);
                   if (m != ctx.modules.end() && !executed) m->second.state = HandleState::kLive;
                 },
                 [](const auto&) {},
             },
             work.op);
}

// texture_create's rule on both backends: a texture or surface object reads
// (or writes) only memory inside one of the context's allocations, and the
// table has room. Called with ctx.mu held, after texture_check.
template <class Ctx>
Status check_texture_room(Ctx& ctx, const TextureDesc& d) {
  uint64_t start = 0;
  if (!ctx.allocations.resolve(d.base, resource_bytes(d), false, &start)) return Status::kInvalidValue;
  return ctx.textures.size() < kMaxTextures ? Status::kSuccess : Status::kMemoryAllocation;
}

// cudaStreamQuery: kNotReady while work accepted on the stream is pending.
template <class Ctx>
Status query_stream(Ctx& ctx, Handle stream) {
  std::lock_guard<std::mutex> lock(ctx.mu);
  if (!ok(ctx.fault)) return ctx.fault;
  const StreamState* s = ctx.stream(stream);
  if (!s) return Status::kInvalidResourceHandle;
  return s->pending > 0 ? Status::kNotReady : Status::kSuccess;
}

// cudaEventQuery: kNotReady while a RecordEvent of it is pending.
template <class Ctx>
Status query_event(Ctx& ctx, Handle event) {
  std::lock_guard<std::mutex> lock(ctx.mu);
  if (!ok(ctx.fault)) return ctx.fault;
  auto it = ctx.events.find(event);
  if (it == ctx.events.end()) return Status::kInvalidResourceHandle;
  return it->second.pending > 0 ? Status::kNotReady : Status::kSuccess;
}

}  // namespace vgpu::executor::common
