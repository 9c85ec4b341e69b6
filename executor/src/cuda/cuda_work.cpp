// The cuda backend: queued work. accept() checks and books it against the
// context's tables, execute() has the worker run it to completion (in order,
// on the dispatcher thread; what a batch takes goes as a batch of one,
// cuda_batch.cpp) and reports its GPU time, discard() unbooks it. The worker
// is waited for at most the watchdog.
#include <chrono>
#include <type_traits>

#include <spdlog/spdlog.h>

#include "common/rows_copy.h"
#include "common/context_tables.h"
#include "common/heap_charge.h"
#include "cu_status.h"
#include "cuda_backend_impl.h"
#include "launch_limits.h"

namespace vgpu::executor::cuda {
namespace {

using common::Overloaded;

uint64_t elapsed_since(std::chrono::steady_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t)
          .count());
}

}  // namespace

Status CudaBackend::accept(const Work& work) {
  auto ctx = find(work.context);
  if (!ctx) return Status::kInvalidResourceHandle;
  std::lock_guard<std::mutex> lock(ctx->mu);
  // With this GPU's launch limits.
  return common::accept_work(*ctx, work, [&](const Launch& l, const auto&) {
    return check_launch(device_, l.grid, l.block, l.shared_mem);
  });
}

void CudaBackend::settle(Context& ctx, const Work& work, bool executed) {
  std::lock_guard<std::mutex> lock(ctx.mu);
  common::settle_tables(ctx, work, executed);
  if (const Free* f = std::get_if<Free>(&work.op)) {  // executed: gone (or kept, if the free failed)
    if (Allocation* a = ctx.allocations.find_start(f->dptr)) a->free_pending = false;
  }
}

void CudaBackend::discard(const Work& work) {
  if (auto ctx = find(work.context)) settle(*ctx, work, false);
}

ExecResult CudaBackend::execute(const Work& work) {
  auto ctx = find(work.context);
  if (!ctx) return {Status::kInvalidResourceHandle, 0};
  ExecResult result;
  if (batches(work.op)) {
    const Work* one = &work;
    // A budget of 0 issues just it, waited for no longer than the watchdog.
    execute_batch({&one, 1}, {0, 1}, &result);  // settles it
    return result;
  }
  if (std::holds_alternative<Reset>(work.op)) {
    const auto start = std::chrono::steady_clock::now();
    result.status = reset(*ctx);
    result.gpu_ns = elapsed_since(start);
  } else {
    result = run(*ctx, work);
  }
  settle(*ctx, work, true);
  return result;
}

// What the driver wrote for the item just run (device printf to stdout,
// anything else to stderr) goes to the context's program, never to the log.
void CudaBackend::keep_output(Context& ctx, WorkerProcess& worker) {
  for (int stream : {1, 2}) {
    std::string text;
    const size_t dropped = worker.take_output(stream, &text, common::DeviceOutput::kMaxBytes);
    if (!text.empty()) ctx.output.keep(stream, text);
    if (dropped > 0) ctx.output.drop(stream, dropped);
  }
}

ExecResult CudaBackend::run_worker(Context& ctx, const wire::Request& request,
                                   std::span<const uint8_t> tail, std::string_view what) {
  Call call;
  {
    std::lock_guard<std::mutex> lock(ctx.mu);
    if (Status s = begin(ctx, &call); !ok(s)) return {s, 0};
  }
  const auto start = std::chrono::steady_clock::now();
  const uint64_t deadline = work_deadline();
  WorkerProcess::Answer a;
  switch (request.op) {
    case wire::Op::kCopyIn:
      a = call.worker->copy_in(request.a, tail.data(), request.b, request.rows, deadline);
      break;
    case wire::Op::kCopyOut:
      a = call.worker->copy_out(request.a, const_cast<uint8_t*>(tail.data()), request.b, request.rows,
                                deadline);
      break;
    default:
      a = call.worker->work(request, tail, deadline);
      break;
  }
  keep_output(ctx, *call.worker);
  std::lock_guard<std::mutex> lock(ctx.mu);
  const Status st = absorb(ctx, call, a, Status::kLaunchTimeout, what);
  // A work item that ended its context still kept the GPU busy until then.
  const uint64_t gpu_ns = a.link == WorkerProcess::Link::kOk ? a.reply.gpu_ns : elapsed_since(start);
  return {st, gpu_ns};
}

ExecResult CudaBackend::run_rows(Context& ctx, const CopyRows& c) {
  // One worker copy when the host side's rows are packed (the guest stages
  // them so) or there is no host side; else one a row.
  const bool packed = c.kind == proto::kRowsDeviceToDevice ||
                      (c.kind == proto::kRowsHostToDevice ? c.src_pitch : c.dst_pitch) == c.width;
  const uint64_t height = packed ? 1 : c.height;
  const wire::RowShape shape{c.width, c.dst_pitch, c.src_pitch};
  ExecResult total;
  for (uint64_t y = 0; y < height; ++y) {
    const uint64_t dst = c.dst + y * c.dst_pitch, src = c.src + y * c.src_pitch;
    const uint64_t bytes = packed ? c.width * c.height : c.width;
    wire::Request req;
    if (packed) req.rows = shape;
    std::span<const uint8_t> tail;
    std::string_view what;
    switch (c.kind) {
      case proto::kRowsHostToDevice:
        req.op = wire::Op::kCopyIn;
        req.a = dst;
        req.b = bytes;
        tail = {c.host + y * c.src_pitch, bytes};
        what = "a copy of rows to the device";
        break;
      case proto::kRowsDeviceToHost:
        req.op = wire::Op::kCopyOut;
        req.a = src;
        req.b = bytes;
        tail = {c.host + y * c.dst_pitch, bytes};
        what = "a copy of rows from the device";
        break;
      default:
        req.op = wire::Op::kCopyOnDevice;
        req.a = dst;
        req.b = src;
        req.c = bytes;
        what = "a copy of rows on the device";
        break;
    }
    const ExecResult r = run_worker(ctx, req, tail, what);
    total.gpu_ns += r.gpu_ns;
    if (!ok(r.status)) return {r.status, total.gpu_ns};
    if (req.op != wire::Op::kCopyOnDevice) staged_bytes_ += bytes;
  }
  return total;
}

Status CudaBackend::set_heap_size(Context& ctx, uint64_t bytes) {
  Call call;
  uint64_t from = 0;
  {
    std::lock_guard<std::mutex> lock(ctx.mu);
    if (Status s = begin(ctx, &call); !ok(s)) return s;
    if (bytes == ctx.heap_bytes) return Status::kSuccess;
    from = ctx.heap_bytes;
    // Charged before the driver grows it: a tenant never holds more than its room.
    if (!common::recharge_heap(ledger_, ctx.tenant, from, std::max(from, bytes), &ctx.charged)) {
      return Status::kMemoryAllocation;
    }
  }
  wire::Request req;
  req.op = wire::Op::kSetHeapSize;
  req.a = bytes;
  const auto a = call.worker->control(req, {}, -1, call_deadline());
  std::lock_guard<std::mutex> lock(ctx.mu);
  const Status st = absorb(ctx, call, a, Status::kLaunchFailure, "setting the device heap's size");
  if (call.generation != ctx.generation) return st;  // the worker is gone, and the charge with it
  // The size asked for, charged; or, if the driver refused, the size before
  // (what was reserved above goes back).
  const uint64_t now = ok(st) ? bytes : from;
  common::recharge_heap(ledger_, ctx.tenant, std::max(from, bytes), now, &ctx.charged);  // gives back only
  ctx.heap_bytes = now;
  return st;
}

ExecResult CudaBackend::run(Context& ctx, const Work& work) {
  if (const SetHeapSize* h = std::get_if<SetHeapSize>(&work.op)) return {set_heap_size(ctx, h->bytes), 0};
  // What the worker must run (req.op stays unset when nothing is), checked
  // again under the lock: accept() checked at queue time, a fault or reset
  // may have come since.
  wire::Request req;
  std::span<const uint8_t> tail;
  std::string what;
  const CopyRows* rows = nullptr;
  {
    std::lock_guard<std::mutex> lock(ctx.mu);
    if (!ok(ctx.fault)) return {ctx.fault, 0};
    uint64_t start = 0;
    auto in_one = [&](uint64_t addr, uint64_t size) {
      return ctx.allocations.resolve(addr, size, true, &start);
    };
    const Status st =
        std::visit(Overloaded{
                       // Larger than a batch takes: straight from or to the
                       // registered data area, or through the staging area.
                       [&](const CopyHtoD& c) {
                         if (c.size == 0) return Status::kSuccess;  // nothing to run
                         if (!c.src || !in_one(c.dst, c.size)) return Status::kInvalidValue;
                         req.a = c.dst;
                         req.b = c.size;
                         if (ctx.area.holds(c.src, c.size, &req.c)) {
                           req.op = wire::Op::kCopyInArea;
                         } else {
                           req.op = wire::Op::kCopyIn;
                           tail = {c.src, c.size};
                         }
                         what = "a copy to the device";
                         return Status::kSuccess;
                       },
                       [&](const CopyDtoH& c) {
                         if (c.size == 0) return Status::kSuccess;
                         if (!c.dst || !in_one(c.src, c.size)) return Status::kInvalidValue;
                         req.a = c.src;
                         req.b = c.size;
                         if (ctx.area.holds(c.dst, c.size, &req.c)) {
                           req.op = wire::Op::kCopyOutArea;
                         } else {
                           req.op = wire::Op::kCopyOut;
                           tail = {c.dst, c.size};
                         }
                         what = "a copy from the device";
                         return Status::kSuccess;
                       },
                       [&](const CopyRows& c) {
                         common::RowsSides sides;
                         if (!common::rows_sides(c, &sides)) return Status::kInvalidValue;
                         if (sides.dst_device && !in_one(c.dst, sides.dst_span))
                           return Status::kInvalidValue;
                         if (sides.src_device && !in_one(c.src, sides.src_span))
                           return Status::kInvalidValue;
                         rows = &c;
                         return Status::kSuccess;
                       },
                       [&](const Free& f) {
                         if (f.dptr == 0) return Status::kSuccess;
                         const Allocation* a = ctx.allocations.find_start(f.dptr);
                         if (!a || a->kind != AllocKind::kUser) return Status::kInvalidValue;
                         req.op = wire::Op::kFree;
                         req.a = f.dptr;
                         what = "a free";
                         return Status::kSuccess;
                       },
                       [&](const DestroyEvent& d) {
                         if (!ctx.events.count(d.event)) return Status::kInvalidResourceHandle;
                         req.op = wire::Op::kDestroyEvent;
                         req.a = d.event;
                         what = "an event destruction";
                         return Status::kSuccess;
                       },
                       [&](const DestroyTexture& d) {
                         if (!ctx.textures.count(d.texture)) return Status::kInvalidResourceHandle;
                         req.op = wire::Op::kTextureDestroy;
                         req.a = d.texture;
                         what = "a texture destruction";
                         return Status::kSuccess;
                       },
                       [&](const UnloadModule& u) {
                         if (!ctx.modules.count(u.module)) return Status::kInvalidResourceHandle;
                         req.op = wire::Op::kUnloadModule;
                         req.a = u.module;
                         what = "a module unload";
                         return Status::kSuccess;
                       },
                       // Work outside batches runs once nothing is in flight: a
                       // synchronization has nothing left to wait for.
                       [](const Synchronize&) { return Status::kSuccess; },
                       // execute() sends these as batches.
                       [](const Launch&) { return Status::kNotSupported; },
                       [](const Memset&) { return Status::kNotSupported; },
                       [](const CopyDtoD&) { return Status::kNotSupported; },
                       [](const RecordEvent&) { return Status::kNotSupported; },
                       [](const WaitEvent&) { return Status::kNotSupported; },
                       [](const DestroyStream&) { return Status::kNotSupported; },
                       // execute() resets, and run() sets the heap, before they get here.
                       [](const Reset&) { return Status::kNotSupported; },
                       [](const SetHeapSize&) { return Status::kNotSupported; },
                       // No catch-all: a work type added without a handler does not compile.
                   },
                   work.op);
    if (!ok(st)) return {st, 0};
    if (!rows && req.op == wire::Op{}) return {Status::kSuccess, 0};  // done here: nothing for the GPU
  }
  if (rows) return run_rows(ctx, *rows);

  const ExecResult r = run_worker(ctx, req, tail, what);
  if (!ok(r.status)) return r;
  if (req.op == wire::Op::kCopyIn || req.op == wire::Op::kCopyOut) staged_bytes_ += req.b;
  if (req.op == wire::Op::kCopyInArea || req.op == wire::Op::kCopyOutArea) direct_bytes_ += req.b;
  // The worker did it: the tables follow.
  std::lock_guard<std::mutex> lock(ctx.mu);
  std::visit(Overloaded{
                 [&](const Free& f) { ctx.forget(ledger_, f.dptr); },
                 [&](const DestroyEvent& d) { ctx.events.erase(d.event); },
                 [&](const DestroyTexture& d) { ctx.textures.erase(d.texture); },
                 [&](const UnloadModule& u) {
                   auto m = ctx.modules.find(u.module);
                   if (m == ctx.modules.end()) return;
                   for (const auto& [name, addr] : m->second.variables) ctx.forget(ledger_, addr);
                   for (const auto& [name, fn] : m->second.functions) ctx.functions.erase(fn);
                   ctx.modules.erase(m);
                 },
                 [](const auto&) {},
             },
             work.op);
  return r;
}

}  // namespace vgpu::executor::cuda
