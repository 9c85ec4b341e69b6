// The sim backend: kernel launches. The kernel's CPU implementation runs in
// the context's worker process under the watchdog; the engine then stays busy
// until the modeled duration has passed, in real time.
//
// Outcomes (the sticky ones fault the context until a Reset, as on a GPU):
//   worker died (the plug-in faulted)         kIllegalAddress   sticky
//   ran, or was modeled, past the watchdog    kLaunchTimeout    sticky
//   the plug-in returned nonzero              kLaunchFailure    sticky
//   no plug-in implements the kernel          kInvalidDeviceFunction
//   the worker cannot be started              kLaunchFailure (logged)
#include <spdlog/spdlog.h>

#include "device_model.h"
#include "engine_clock.h"
#include "sim_backend_impl.h"
#include "vgpu/sim_kernel.h"

namespace vgpu::executor::sim {
namespace {
constexpr std::chrono::milliseconds kWorkerStartLimit{20000};
}

ExecResult SimBackend::run_launch(Context& ctx, const Launch& launch) {
  std::lock_guard<std::mutex> worker_lock(ctx.worker_mu);
  WorkerLaunch request;
  std::string kernel;
  std::vector<WorkerSymbol> symbols;
  uint64_t symbols_version = 0;
  {
    std::lock_guard<std::mutex> lock(ctx.mu);
    if (!ok(ctx.fault)) return {ctx.fault, 0};
    auto f = ctx.functions.find(launch.function);
    if (f == ctx.functions.end()) return {Status::kInvalidResourceHandle, 0};
    if (launch.params.size() != f->second.param_bytes) return {Status::kInvalidValue, 0};
    const Status st = check_launch_config(launch.grid, launch.block, launch.shared_mem);
    if (!ok(st)) return {st, 0};
    kernel = f->second.name;
    request.module = f->second.module;
    symbols_version = ctx.symbols_version;
    if (!ctx.worker || ctx.worker_symbols_version != symbols_version) symbols = ctx.symbols();
  }
  request.kernel = kernel;
  for (int i = 0; i < 3; ++i) {
    request.grid[i] = launch.grid[i];
    request.block[i] = launch.block[i];
  }
  request.shared_mem = launch.shared_mem;
  request.params = launch.params;
  request.modeled_ns = modeled_launch_ns(config_, launch.grid, launch.block);

  if (!ctx.worker) {
    std::string error;
    const Status st = Worker::start(worker_spec_, ctx.arena->fd(), ctx.slot_base,
                                    ctx.arena->span(), kWorkerStartLimit, &ctx.worker, &error);
    if (!ok(st)) {
      spdlog::error("sim: context {}: cannot start its worker: {}", ctx.id, error);
      return {Status::kLaunchFailure, 0};
    }
    ctx.worker_symbols_version = 0;
  }
  if (ctx.worker_symbols_version != symbols_version) {
    ctx.worker->send_symbols(symbols);  // a worker that is gone shows at the launch
    ctx.worker_symbols_version = symbols_version;
  }

  auto fault = [&](Status s) {
    std::lock_guard<std::mutex> lock(ctx.mu);
    ctx.set_fault(s);
    return s;
  };
  const uint64_t watchdog_ns = static_cast<uint64_t>(config_.watchdog.count()) * 1'000'000ull;
  const uint64_t start = engine_now_ns();
  const WorkerReply reply = ctx.worker->launch(request, config_.watchdog);
  if (reply.kind == WorkerReply::Kind::kTimeout) {
    ctx.worker.reset();
    spdlog::warn("sim: context {} (tenant {}): kernel {} ran past the {} ms watchdog; "
                 "worker killed, context faulted", ctx.id, ctx.tenant, kernel,
                 config_.watchdog.count());
    return {fault(Status::kLaunchTimeout), engine_now_ns() - start};
  }
  if (reply.kind == WorkerReply::Kind::kDied) {
    ctx.worker.reset();
    spdlog::warn("sim: context {} (tenant {}): kernel {} ended its worker ({}); context faulted",
                 ctx.id, ctx.tenant, kernel, reply.detail);
    return {fault(Status::kIllegalAddress), engine_now_ns() - start};
  }
  switch (reply.done.outcome) {
    case wire::Outcome::kOk:
      break;
    case wire::Outcome::kNoImplementation:
      if (ctx.reported_missing.insert(kernel).second) {
        spdlog::warn("sim: context {}: no CPU implementation of kernel {}: no plug-in exports {}{}",
                     ctx.id, kernel, VGPU_SIM_SYMBOL_PREFIX, kernel);
      }
      return {Status::kInvalidDeviceFunction, engine_now_ns() - start};
    case wire::Outcome::kPluginError:
      spdlog::warn("sim: context {}: kernel {} failed (plug-in returned {}); context faulted",
                   ctx.id, kernel, reply.done.plugin_rc);
      return {fault(Status::kLaunchFailure), engine_now_ns() - start};
    default:
      spdlog::error("sim: context {}: worker rejected the launch of {}", ctx.id, kernel);
      return {fault(Status::kLaunchFailure), engine_now_ns() - start};
  }
  const uint64_t modeled = reply.done.modeled_ns;
  if (modeled > watchdog_ns) {
    // A GPU would have run it until its watchdog fired.
    engine_busy_until(start + watchdog_ns);
    spdlog::warn("sim: context {} (tenant {}): kernel {} is modeled to run {} ns, past the {} ms "
                 "watchdog; context faulted", ctx.id, ctx.tenant, kernel, modeled,
                 config_.watchdog.count());
    return {fault(Status::kLaunchTimeout), engine_now_ns() - start};
  }
  engine_busy_until(start + modeled);
  return {Status::kSuccess, engine_now_ns() - start};
}

}  // namespace vgpu::executor::sim
