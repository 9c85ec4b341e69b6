// The cuda backend: consecutive launches of one context go to its worker in
// one message and stay in flight on the GPU together (Engine::launch_batch),
// instead of one round trip to the worker, and an idle GPU, per launch.
#include <algorithm>
#include <chrono>
#include <cstring>

#include <spdlog/fmt/fmt.h>

#include "cu_status.h"
#include "cuda_backend_impl.h"

namespace vgpu::executor::cuda {
namespace {

constexpr size_t padded(size_t n) { return (n + 7) / 8 * 8; }

}  // namespace

uint32_t CudaBackend::max_batch_depth() const { return wire::kMaxInFlight; }

// Packs the launches at the front of `works` that are ready to go (their
// function known, their parameters its size) into a batch request, as many
// as one message holds. ctx.mu held. Returns how many; *first names the
// first kernel, for the log.
size_t CudaBackend::pack_batch(Context& ctx, std::span<const Work* const> works,
                               std::vector<uint8_t>* tail, std::string* first) {
  const size_t most = std::min<size_t>(works.size(), wire::kMaxBatch);
  size_t count = 0;
  for (; count < most; ++count) {
    const Work& w = *works[count];
    const Launch* l = std::get_if<Launch>(&w.op);
    if (!l || w.context != ctx.id) break;
    auto f = ctx.functions.find(l->function);
    if (f == ctx.functions.end() || l->params.size() != f->second.param_bytes) break;
    const size_t bytes = sizeof(wire::BatchLaunch) + padded(l->params.size());
    if (sizeof(wire::Request) + tail->size() + bytes > wire::kMaxMessageBytes) break;
    wire::BatchLaunch b;
    b.function = l->function;
    std::copy_n(l->grid, 3, b.grid);
    std::copy_n(l->block, 3, b.block);
    b.shared_mem = l->shared_mem;
    b.cooperative = l->cooperative ? 1 : 0;
    b.param_bytes = static_cast<uint32_t>(l->params.size());
    const size_t at = tail->size();
    tail->resize(at + bytes, 0);
    std::memcpy(tail->data() + at, &b, sizeof b);
    if (!l->params.empty()) std::memcpy(tail->data() + at + sizeof b, l->params.data(), l->params.size());
    if (count == 0) *first = f->second.name;
  }
  return count;
}

size_t CudaBackend::execute_batch(std::span<const Work* const> works, const BatchLimits& limits,
                                  ExecResult* results) {
  if (works.empty()) return 0;
  auto ctx = find(works[0]->context);
  if (!ctx) return Backend::execute_batch(works.first(1), limits, results);
  std::vector<uint8_t> tail;
  std::string first;
  size_t count = 0;
  Call call;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (ok(ctx->fault)) count = pack_batch(*ctx, works, &tail, &first);
    if (count > 0 && !ok(begin(*ctx, &call))) count = 0;
  }
  // Not a launch that can go (or the context is faulted): execute() says why.
  if (count == 0) return Backend::execute_batch(works.first(1), limits, results);

  wire::Request req;
  req.op = wire::Op::kLaunchBatch;
  req.a = count;
  req.b = limits.budget_ns;
  req.value = std::clamp<uint32_t>(limits.depth, 1, wire::kMaxInFlight);
  // Every launch may take up to the watchdog, and up to `depth` of them run
  // after the budget is reached: a hung kernel is found within that.
  const uint64_t watchdog_ns = static_cast<uint64_t>(config_.watchdog.count()) * 1'000'000ull;
  const uint64_t deadline =
      monotonic_ns() + std::min(limits.budget_ns, watchdog_ns) + req.value * watchdog_ns;
  const auto start = std::chrono::steady_clock::now();
  WorkerProcess::Answer a = call.worker->work(req, tail, deadline);
  keep_output(*ctx, *call.worker);

  size_t ran = count;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    const std::string what = count == 1 ? "kernel " + first
                                        : fmt::format("a batch of {} launches (kernel {} first)", count, first);
    const bool whole = a.link != WorkerProcess::Link::kOk ||
                       (a.reply.count >= 1 && a.reply.count <= count &&
                        a.tail.size() == a.reply.count * sizeof(wire::ItemResult));
    if (!whole) {
      call.worker->kill("answered a batch with a malformed reply");
      a.link = WorkerProcess::Link::kGone;
    }
    const Status st = absorb(*ctx, call, a, Status::kLaunchTimeout, what);
    if (a.link != WorkerProcess::Link::kOk) {
      // Lost with all of them in flight: the GPU was busy until then.
      const auto waited = std::chrono::steady_clock::now() - start;
      results[0] = {st, static_cast<uint64_t>(
                            std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count())};
      for (size_t i = 1; i < count; ++i) results[i] = {st, 0};
    } else {
      ran = a.reply.count;
      for (size_t i = 0; i < ran; ++i) {
        wire::ItemResult r;
        std::memcpy(&r, a.tail.data() + i * sizeof r, sizeof r);
        const auto cu = static_cast<CUresult>(r.result);
        // A sticky error ended the context (absorb): each launch it reached gets its status.
        const Status item = cu == CUDA_SUCCESS ? Status::kSuccess
                            : is_sticky(cu)    ? st
                                               : to_status(cu);
        results[i] = {item, r.gpu_ns};
      }
    }
  }
  for (size_t i = 0; i < ran; ++i) settle(*ctx, *works[i], true);
  return ran;
}

}  // namespace vgpu::executor::cuda
