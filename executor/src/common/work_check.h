// What accept() checks of a work item before it is queued, shared by the sim
// and cuda backends so both hold a guest to the same rules: every device range
// lies inside one of the context's own allocations, every handle is the
// context's and not being destroyed, a launch's parameters are the size its
// function takes. It also marks what queued work will destroy, so later work
// cannot use it. Only the launch limits differ (the backend's device).
#pragma once

#include <type_traits>
#include <variant>

#include "allocation_map.h"
#include "handle_state.h"
#include "rows_copy.h"
#include "vgpu/executor/backend.h"

namespace vgpu::executor::common {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

// `Ctx` has allocations (resolve), streams, events, modules, functions (maps
// by handle); `launch_limits(launch, function_state)` returns a Status.
// Called with the context's lock held.
template <class Ctx, class LaunchLimits>
Status check_work(Ctx& ctx, const WorkOp& op, LaunchLimits&& launch_limits) {
  uint64_t start = 0;
  auto in_one = [&](uint64_t addr, uint64_t size) {
    return ctx.allocations.resolve(addr, size, false, &start);
  };
  return std::visit(
      Overloaded{
          [&](const CopyHtoD& c) {
            if (c.size == 0) return Status::kSuccess;
            return c.src && in_one(c.dst, c.size) ? Status::kSuccess : Status::kInvalidValue;
          },
          [&](const CopyDtoH& c) {
            if (c.size == 0) return Status::kSuccess;
            return c.dst && in_one(c.src, c.size) ? Status::kSuccess : Status::kInvalidValue;
          },
          [&](const CopyDtoD& c) {
            if (c.size == 0) return Status::kSuccess;
            return in_one(c.src, c.size) && in_one(c.dst, c.size) ? Status::kSuccess
                                                                  : Status::kInvalidValue;
          },
          [&](const Memset& m) {
            if (m.size == 0) return Status::kSuccess;
            return in_one(m.dst, m.size) ? Status::kSuccess : Status::kInvalidValue;
          },
          [&](const CopyRows& c) {
            RowsSides sides;
            if (!rows_sides(c, &sides)) return Status::kInvalidValue;
            if (sides.dst_device && !in_one(c.dst, sides.dst_span)) return Status::kInvalidValue;
            if (sides.src_device && !in_one(c.src, sides.src_span)) return Status::kInvalidValue;
            return Status::kSuccess;
          },
          [&](const Launch& l) {
            auto f = ctx.functions.find(l.function);
            if (f == ctx.functions.end()) return Status::kInvalidResourceHandle;
            auto m = ctx.modules.find(f->second.module);
            if (m == ctx.modules.end() || m->second.state != HandleState::kLive) {
              return Status::kInvalidResourceHandle;
            }
            if (l.params.size() != f->second.param_bytes) return Status::kInvalidValue;
            return launch_limits(l, f->second);
          },
          [&](const RecordEvent& r) {
            auto e = ctx.events.find(r.event);
            if (e == ctx.events.end() || e->second.state != HandleState::kLive) {
              return Status::kInvalidResourceHandle;
            }
            ++e->second.pending;
            return Status::kSuccess;
          },
          [&](const WaitEvent& w) {
            auto e = ctx.events.find(w.event);
            return e == ctx.events.end() || e->second.state != HandleState::kLive ? Status::kInvalidResourceHandle
                                                                 : Status::kSuccess;
          },
          [&](const Free& f) {
            if (f.dptr == 0) return Status::kSuccess;  // cudaFree(NULL)
            auto* a = ctx.allocations.find_start(f.dptr);
            if (!a || a->kind != AllocKind::kUser || a->free_pending) return Status::kInvalidValue;
            a->free_pending = true;
            return Status::kSuccess;
          },
          [&](const DestroyStream& d) {
            if (d.stream <= 2) return Status::kInvalidResourceHandle;  // the default streams
            auto s = ctx.streams.find(d.stream);
            if (s == ctx.streams.end() || s->second.state != HandleState::kLive) {
              return Status::kInvalidResourceHandle;
            }
            s->second.state = HandleState::kGoing;
            return Status::kSuccess;
          },
          [&](const DestroyEvent& d) {
            auto e = ctx.events.find(d.event);
            if (e == ctx.events.end() || e->second.state != HandleState::kLive) {
              return Status::kInvalidResourceHandle;
            }
            e->second.state = HandleState::kGoing;
            return Status::kSuccess;
          },
          [&](const DestroyTexture& d) {
            auto t = ctx.textures.find(d.texture);
            if (t == ctx.textures.end() || t->second.state != HandleState::kLive) return Status::kInvalidResourceHandle;
            t->second.state = HandleState::kGoing;
            return Status::kSuccess;
          },
          [&](const UnloadModule& u) {
            auto m = ctx.modules.find(u.module);
            if (m == ctx.modules.end() || m->second.state != HandleState::kLive) {
              return Status::kInvalidResourceHandle;
            }
            m->second.state = HandleState::kGoing;
            return Status::kSuccess;
          },
          [&](const Synchronize&) { return Status::kSuccess; },
          [&](const Reset&) { return Status::kSuccess; },
          [&](const SetHeapSize&) { return Status::kSuccess; },  // the backend checks it in order
      },
      op);
}

}  // namespace vgpu::executor::common
