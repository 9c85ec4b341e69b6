// The cuda backend: consecutive items of one context (launches, memsets,
// copies on the device and small ones to and from it, event records and
// waits, stream destruction: batches(), cuda_batch_items.cpp) go to its
// worker in one message and stay in
// flight on the GPU together, each on its own stream (Engine::run_items),
// instead of one round trip to the worker, and an idle GPU, per item. A
// batch may come back with its last items still running, so the next batch,
// of this context or another, is on its way before they end.
#include <algorithm>
#include <chrono>
#include <cstring>

#include <spdlog/fmt/fmt.h>

#include "cu_status.h"
#include "cuda_backend_impl.h"

namespace vgpu::executor::cuda {

// A batch request on its way to a worker (send_batch), waiting for its reply
// (receive_batch).
struct CudaBackend::SentBatch {
  std::shared_ptr<Context> ctx;
  Call call;
  size_t carried = 0;    // items in flight before it
  size_t count = 0;      // new items in it
  uint64_t wait_ns = 0;  // how long the reply may take, from when it is waited for
  std::string what;      // for the log
  Status refused = Status::kSuccess;  // why nothing was sent, when the first item cannot run
};

uint32_t CudaBackend::max_batch_depth() const { return wire::kMaxInFlight; }

// Sends the carried items' continuation: the items after them that can go
// (none when `finish`: only wait for those in flight). False, with nothing
// sent, when no request can go: the context is gone or faulted (its worker,
// and the items in flight on it, are gone: out->refused), the first new item
// cannot run (out->refused), or is not one a batch takes, and none are in
// flight.
bool CudaBackend::send_batch(const BatchRun& run, const BatchLimits& limits, bool finish,
                             SentBatch* out) {
  out->ctx = find(run.works[0]->context);
  if (!out->ctx) {
    out->refused = Status::kInvalidResourceHandle;
    return false;
  }
  Context& ctx = *out->ctx;
  std::vector<uint8_t> tail;
  std::string first;
  {
    std::lock_guard<std::mutex> lock(ctx.mu);
    if (Status st = begin(ctx, &out->call); !ok(st)) {
      out->refused = st;
      return false;
    }
    if (!finish) {
      uint64_t out_bytes = 0;  // what the carried items bring back
      for (size_t i = 0; i < run.carried; ++i) out_bytes += reply_bytes(*run.works[i]);
      out->count =
          pack_batch(ctx, run.works.subspan(run.carried), out_bytes, &tail, &first, &out->refused);
    }
  }
  out->carried = run.carried;
  if (out->count == 0 && out->carried == 0) return false;

  wire::Request req;
  req.op = out->count > 0 ? wire::Op::kBatch : wire::Op::kFinishBatch;
  req.a = out->count;
  req.b = limits.budget_ns;
  req.c = out->carried;
  const uint32_t depth = std::clamp<uint32_t>(limits.depth, 1, wire::kMaxInFlight);
  req.value = depth | (limits.may_leave_in_flight ? wire::kLeaveInFlight : 0) |
              (limits.work_follows ? wire::kWorkFollows : 0);
  // Every item may take up to the watchdog: those in flight, and up to
  // `depth` after the budget is reached. A hung kernel is found within that.
  const uint64_t watchdog_ns = static_cast<uint64_t>(config_.watchdog.count()) * 1'000'000ull;
  out->wait_ns = (out->carried + (out->count > 0 ? depth : 0)) * watchdog_ns +
                 (out->count > 0 ? std::min(limits.budget_ns, watchdog_ns) : 0);
  if (out->count == 0) {
    out->what = out->carried == 1 ? std::string("an item in flight")
                                  : fmt::format("{} items in flight", out->carried);
  } else {
    out->what =
        out->count == 1 ? first : fmt::format("a batch of {} items ({} first)", out->count, first);
  }
  // A failed send kills the worker: receive_batch reports it.
  out->call.worker->send_work(req, tail);
  return true;
}

void CudaBackend::receive_batch(SentBatch& s, BatchRun& run) {
  Context& ctx = *s.ctx;
  const auto start = std::chrono::steady_clock::now();
  WorkerProcess::Answer a = s.call.worker->receive_work(monotonic_ns() + s.wait_ns);
  keep_output(ctx, *s.call.worker);
  const size_t sent = s.carried + s.count;
  {
    std::lock_guard<std::mutex> lock(ctx.mu);
    const wire::Reply& r = a.reply;
    // The finished items' results, then the bytes of their copies from the device.
    uint64_t expected = 0;
    if (r.count <= sent) {
      expected = r.count * sizeof(wire::ItemResult);
      for (size_t i = 0; i < r.count; ++i) expected += reply_bytes(*run.works[i]);
    }
    const bool whole =
        a.link != WorkerProcess::Link::kOk ||
        (r.a <= s.count && (s.count == 0 || r.a >= 1) && r.b <= wire::kMaxInFlight &&
         r.count + r.b == s.carried + r.a && r.count <= sent && a.tail.size() == expected);
    if (!whole) {
      s.call.worker->kill("answered a batch with a malformed reply");
      a.link = WorkerProcess::Link::kGone;
    }
    const Status st = absorb(ctx, s.call, a, Status::kLaunchTimeout, s.what);
    if (a.link != WorkerProcess::Link::kOk) {
      // Lost with all of them in flight: the GPU was busy until then.
      const auto waited = std::chrono::steady_clock::now() - start;
      run.results[0] = {st, static_cast<uint64_t>(
                                std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count())};
      for (size_t i = 1; i < sent; ++i) run.results[i] = {st, 0};
      run.finished = sent;
      run.in_flight = 0;
    } else {
      run.finished = r.count;
      // A sticky error ends the worker (absorb), and with it what was in flight.
      const bool lost = s.call.generation != ctx.generation;
      run.in_flight = lost ? 0 : r.b;
      size_t data = r.count * sizeof(wire::ItemResult);  // where the next copy's bytes are
      for (size_t i = 0; i < r.count; ++i) {
        wire::ItemResult item;
        std::memcpy(&item, a.tail.data() + i * sizeof item, sizeof item);
        const auto cu = static_cast<CUresult>(item.result);
        // A sticky error ended the context (absorb): each item it reached gets its status.
        const Status status = cu == CUDA_SUCCESS ? Status::kSuccess
                              : is_sticky(cu)    ? st
                                                 : to_status(cu);
        run.results[i] = {status, item.gpu_ns};
        if (const uint64_t n = reply_bytes(*run.works[i]); n > 0) {
          const CopyDtoH& c = std::get<CopyDtoH>(run.works[i]->op);
          if (ok(status)) {
            std::memcpy(c.dst, a.tail.data() + data, c.size);  // into the guest's data area
            staged_bytes_ += c.size;
          }
          data += n;
        } else if (const CopyHtoD* c = std::get_if<CopyHtoD>(&run.works[i]->op); c && ok(status)) {
          staged_bytes_ += c->size;  // it came in the request
        }
        if (ok(status) && !lost) after_item(ctx, *run.works[i]);
      }
      if (lost) {
        for (size_t i = r.count; i < r.count + r.b; ++i) run.results[i] = {ctx.fault, 0};
        run.finished += r.b;
      }
    }
  }
  for (size_t i = 0; i < run.finished; ++i) settle(ctx, *run.works[i], true);
}

// Items of a context whose worker is gone: they end with its fault.
void CudaBackend::fail_carried(BatchRun& run) {
  Status fault = Status::kLaunchFailure;
  if (auto ctx = find(run.works[0]->context)) {
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (!ok(ctx->fault)) fault = ctx->fault;
  }
  for (size_t i = 0; i < run.carried; ++i) run.results[i] = {fault, 0};
  run.finished = run.carried;
  run.in_flight = 0;
  if (auto ctx = find(run.works[0]->context)) {
    for (size_t i = 0; i < run.carried; ++i) settle(*ctx, *run.works[i], true);
  }
}

void CudaBackend::issue_batch(BatchRun& run, const BatchLimits& limits, BatchRun* other) {
  run.finished = run.in_flight = 0;
  if (run.works.empty()) return;
  SentBatch s;
  if (!send_batch(run, limits, false, &s)) {
    if (other) finish_batch(*other);
    if (run.carried > 0) {
      fail_carried(run);
    } else if (!ok(s.refused) || batches(run.works[0]->op)) {
      // (One item a batch takes always packs: kUnknown only guards against
      // sending it round to execute() and back.)
      run.results[0] = {ok(s.refused) ? Status::kUnknown : s.refused, 0};
      run.finished = 1;
      if (s.ctx) settle(*s.ctx, *run.works[0], true);
    } else {
      // Not an item a batch takes: it runs alone.
      run.results[0] = execute(*run.works[0]);
      run.finished = 1;
    }
    return;
  }
  // The other context's launches are ahead of these on the GPU: wait for
  // them first, so that if one of them hangs, the watchdog blames it.
  if (other) finish_batch(*other);
  receive_batch(s, run);
}

void CudaBackend::finish_batch(BatchRun& run) {
  run.finished = run.in_flight = 0;
  if (run.works.empty()) return;
  run.carried = run.works.size();
  SentBatch s;
  if (!send_batch(run, {}, true, &s)) {
    fail_carried(run);
    return;
  }
  receive_batch(s, run);
}

size_t CudaBackend::execute_batch(std::span<const Work* const> works, const BatchLimits& limits,
                                  ExecResult* results) {
  BatchRun run{works, 0, results};
  BatchLimits whole = limits;
  whole.may_leave_in_flight = false;
  issue_batch(run, whole, nullptr);
  return run.finished;
}

}  // namespace vgpu::executor::cuda
