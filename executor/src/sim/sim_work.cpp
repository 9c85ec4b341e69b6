// The sim backend: queued work. accept() checks and books it, execute() runs
// it on the dispatcher thread (kernels: sim_launch.cpp), discard() unbooks it.
//
// Work of one context executes in the order it was accepted, so waits and
// synchronizations have nothing left to wait for: they only report the
// context's sticky error.
#include <cstring>
#include <type_traits>

#include <spdlog/spdlog.h>

#include "common/context_tables.h"
#include "common/heap_charge.h"
#include "common/rows_copy.h"
#include "device_model.h"
#include "dma_copy.h"
#include "engine_clock.h"
#include "sim_backend_impl.h"

namespace vgpu::executor::sim {

using common::Overloaded;

Status SimBackend::accept(const Work& work) {
  auto ctx = find(work.context);
  if (!ctx) return Status::kInvalidResourceHandle;
  std::lock_guard<std::mutex> lock(ctx->mu);
  return common::accept_work(*ctx, work, [](const Launch& l, const FunctionState& f) {
    return check_launch_config(l.grid, l.block, l.shared_mem, f.max_threads);
  });
}

void SimBackend::settle(Context& ctx, const Work& work, bool executed) {
  std::lock_guard<std::mutex> lock(ctx.mu);
  settle_locked(ctx, work, executed);
}

void SimBackend::settle_locked(Context& ctx, const Work& work, bool executed) {
  common::settle_tables(ctx, work, executed);
  if (const Free* f = std::get_if<Free>(&work.op)) {  // executed: already gone
    if (Allocation* a = ctx.allocations.find_start(f->dptr); a && !executed) a->free_pending = false;
  }
}

void SimBackend::discard(const Work& work) {
  if (auto ctx = find(work.context)) settle(*ctx, work, false);
}

ExecResult SimBackend::execute(const Work& work) {
  auto ctx = find(work.context);
  if (!ctx) return {Status::kInvalidResourceHandle, 0};
  const uint64_t start = engine_now_ns();
  ExecResult result;
  if (std::holds_alternative<Launch>(work.op)) {
    const Work* one = &work;
    run_launches(*ctx, {&one, 1}, ~uint64_t{0}, &result);
  } else if (std::holds_alternative<Reset>(work.op)) {
    reset(*ctx);
    result.gpu_ns = engine_now_ns() - start;
  } else {
    result.status = run(*ctx, work.op);
    result.gpu_ns = engine_now_ns() - start;
  }
  settle(*ctx, work, true);
  return result;
}

// The sim device runs one launch at a time: limits.depth changes nothing.
size_t SimBackend::execute_batch(std::span<const Work* const> works, const BatchLimits& limits,
                                 ExecResult* results) {
  const uint64_t budget_ns = limits.budget_ns;
  if (works.empty()) return 0;
  auto ctx = find(works[0]->context);
  // Only launches of one context are run together; anything else, one at a time.
  bool launches = ctx != nullptr;
  for (const Work* w : works) {
    launches = launches && w->context == works[0]->context && std::holds_alternative<Launch>(w->op);
  }
  if (!launches) return Backend::execute_batch(works, limits, results);
  const size_t ran = run_launches(*ctx, works, budget_ns, results);
  std::lock_guard<std::mutex> lock(ctx->mu);
  for (size_t i = 0; i < ran; ++i) settle_locked(*ctx, *works[i], true);
  return ran;
}

Status SimBackend::run(Context& ctx, const WorkOp& op) {
  // Ranges are resolved under the lock; the bytes move without it. Only this
  // (the dispatcher) thread frees memory, so a resolved range stays valid.
  std::unique_lock<std::mutex> lock(ctx.mu);
  if (!ok(ctx.fault)) return ctx.fault;
  Arena& arena = *ctx.arena;
  uint64_t a = 0, b = 0;
  return std::visit(
      Overloaded{
          [&](const CopyHtoD& c) {
            if (c.size == 0) return Status::kSuccess;
            if (!c.src || !ctx.allocations.resolve(c.dst, c.size, true, &a)) {
              return Status::kInvalidValue;
            }
            lock.unlock();
            dma_copy(arena.at(a), c.src, c.size);
            return Status::kSuccess;
          },
          [&](const CopyDtoH& c) {
            if (c.size == 0) return Status::kSuccess;
            if (!c.dst || !ctx.allocations.resolve(c.src, c.size, true, &a)) {
              return Status::kInvalidValue;
            }
            lock.unlock();
            dma_copy(c.dst, arena.at(a), c.size);
            return Status::kSuccess;
          },
          [&](const CopyDtoD& c) {
            if (c.size == 0) return Status::kSuccess;
            if (!ctx.allocations.resolve(c.src, c.size, true, &a) ||
                !ctx.allocations.resolve(c.dst, c.size, true, &b)) {
              return Status::kInvalidValue;
            }
            lock.unlock();
            std::memmove(arena.at(b), arena.at(a), c.size);
            return Status::kSuccess;
          },
          [&](const CopyRows& c) {
            common::RowsSides sides;
            if (!common::rows_sides(c, &sides)) return Status::kInvalidValue;
            if (sides.dst_device && !ctx.allocations.resolve(c.dst, sides.dst_span, true, &b)) {
              return Status::kInvalidValue;
            }
            if (sides.src_device && !ctx.allocations.resolve(c.src, sides.src_span, true, &a)) {
              return Status::kInvalidValue;
            }
            lock.unlock();
            uint8_t* dst = sides.dst_device ? arena.at(b) : c.host;
            const uint8_t* src = sides.src_device ? arena.at(a) : c.host;
            for (uint64_t y = 0; y < c.height; ++y) {
              uint8_t* to = dst + y * c.dst_pitch;
              const uint8_t* from = src + y * c.src_pitch;
              // Device to device may overlap (one allocation); host rows never do.
              if (sides.dst_device && sides.src_device) std::memmove(to, from, c.width);
              else dma_copy(to, from, c.width);
            }
            return Status::kSuccess;
          },
          [&](const Memset& m) {
            if (m.size == 0) return Status::kSuccess;
            if (!ctx.allocations.resolve(m.dst, m.size, true, &a)) return Status::kInvalidValue;
            lock.unlock();
            std::memset(arena.at(a), m.value, m.size);
            return Status::kSuccess;
          },
          [&](const RecordEvent& r) {
            auto e = ctx.events.find(r.event);
            if (e == ctx.events.end()) return Status::kInvalidResourceHandle;
            e->second.recorded = true;
            e->second.timestamp_ns = engine_now_ns();
            return Status::kSuccess;
          },
          [&](const Free& f) {
            if (f.dptr == 0) return Status::kSuccess;
            Allocation* alloc = ctx.allocations.find_start(f.dptr);
            if (!alloc || alloc->kind != AllocKind::kUser) return Status::kInvalidValue;
            ctx.free(ledger_, f.dptr);
            return Status::kSuccess;
          },
          [&](const DestroyStream& d) {
            return ctx.streams.erase(d.stream) ? Status::kSuccess
                                               : Status::kInvalidResourceHandle;
          },
          [&](const DestroyEvent& d) {
            return ctx.events.erase(d.event) ? Status::kSuccess : Status::kInvalidResourceHandle;
          },
          [&](const DestroyTexture& d) {
            if (!ctx.textures.erase(d.texture)) return Status::kInvalidResourceHandle;
            ++ctx.textures_version;
            return Status::kSuccess;
          },
          [&](const UnloadModule& u) {
            if (!ctx.modules.count(u.module)) return Status::kInvalidResourceHandle;
            ctx.unload(ledger_, u.module);
            return Status::kSuccess;
          },
          [&](const SetHeapSize& h) {
            if (h.bytes == ctx.heap_bytes) return Status::kSuccess;
            if (ctx.heap_used) return Status::kInvalidValue;  // as CUDA, once a kernel used it
            if (!common::recharge_heap(ledger_, ctx.tenant, ctx.heap_bytes, h.bytes, &ctx.charged)) {
              return Status::kMemoryAllocation;
            }
            ctx.heap_bytes = h.bytes;  // the next batch carries it to the worker
            return Status::kSuccess;
          },
          // Work runs in order and to completion: nothing is left to wait for.
          [](const WaitEvent&) { return Status::kSuccess; },
          [](const Synchronize&) { return Status::kSuccess; },
          // execute() runs these itself; reaching here is a dispatch error.
          [](const Launch&) { return Status::kNotSupported; },
          [](const Reset&) { return Status::kNotSupported; },
          // No catch-all: a work type added without a handler does not compile.
      },
      op);
}

void SimBackend::reset(Context& ctx) {
  {
    std::lock_guard<std::mutex> wl(ctx.worker_mu);
    ctx.worker.reset();  // a fresh worker: no plug-in state survives a reset
    ctx.worker_symbols_version = 0;
    ctx.worker_textures_version = 0;
    ctx.reported_missing.clear();
  }
  std::lock_guard<std::mutex> lock(ctx.mu);
  std::vector<uint64_t> user;
  for (const auto& [addr, a] : ctx.allocations.live()) {
    if (a.kind == AllocKind::kUser) user.push_back(addr);
  }
  for (uint64_t addr : user) ctx.free(ledger_, addr);
  // Variables go back to their initial values, as in a freshly loaded module.
  for (auto& [handle, m] : ctx.modules) {
    for (const auto& [name, addr] : m.variables) {
      if (const fatbin::Variable* v = m.image.find_variable(name)) ctx.initialise(addr, *v);
    }
  }
  ctx.streams.clear();
  ctx.events.clear();
  ctx.textures.clear();
  ++ctx.textures_version;
  ctx.fault = Status::kSuccess;
}

}  // namespace vgpu::executor::sim
