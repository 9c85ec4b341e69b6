// The sim backend: kernel launches. The kernel's CPU implementation runs in
// the context's worker process under the watchdog; the engine then stays busy
// until the modeled duration has passed, in real time. Consecutive launches
// of a context travel to the worker as one batch (worker_protocol.h), so a
// stream of small kernels costs one round trip per batch.
//
// Outcomes (the sticky ones fault the context until a Reset, as on a GPU):
//   worker died (the plug-in faulted)         kIllegalAddress   sticky
//   ran, or was modeled, past the watchdog    kLaunchTimeout    sticky
//   the plug-in returned nonzero              kLaunchFailure    sticky
//   an interpreted kernel executed `trap`     kLaunchFailure    sticky
//   no plug-in implements the kernel, and its
//   PTX cannot be interpreted                 kInvalidDeviceFunction
//   the worker cannot be started              kLaunchFailure (logged)
//   a block larger than __launch_bounds__     kLaunchOutOfResources
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device_model.h"
#include "engine_clock.h"
#include "sim_backend_impl.h"
#include "vgpu/sim_kernel.h"

namespace vgpu::executor::sim {
namespace {
constexpr std::chrono::milliseconds kWorkerStartLimit{20000};
// Real time a batch may take before the worker stops it (it finishes the
// launch it is in): the watchdog stays per launch, within this much.
constexpr uint64_t kBatchSliceNs = 1'000'000;

Status fault(Context& ctx, Status s) {
  std::lock_guard<std::mutex> lock(ctx.mu);
  ctx.set_fault(s);
  return s;
}

// For log lines only: the name of a launch's kernel.
std::string kernel_name(Context& ctx, const Work& work) {
  std::lock_guard<std::mutex> lock(ctx.mu);
  auto f = ctx.functions.find(std::get<Launch>(work.op).function);
  return f == ctx.functions.end() ? "(unloaded)" : f->second.name;
}

// Whether the launched kernel's module came with PTX the interpreter could have run.
bool module_has_ptx(Context& ctx, const Work& work) {
  std::lock_guard<std::mutex> lock(ctx.mu);
  auto f = ctx.functions.find(std::get<Launch>(work.op).function);
  if (f == ctx.functions.end()) return false;
  auto m = ctx.modules.find(f->second.module);
  return m != ctx.modules.end() && m->second.ptx != nullptr;
}
}  // namespace

size_t SimBackend::run_launches(Context& ctx, std::span<const Work* const> works,
                                uint64_t budget_ns, ExecResult* results) {
  std::lock_guard<std::mutex> worker_lock(ctx.worker_mu);
  const uint64_t watchdog_ns = static_cast<uint64_t>(config_.watchdog.count()) * 1'000'000ull;
  std::vector<WorkerSymbol> symbols;
  uint64_t symbols_version = 0;
  std::vector<wire::Texture> textures;
  uint64_t textures_version = 0;
  ctx.estimates.clear();
  // Modules of this batch whose PTX a fresh or running worker lacks.
  if (!ctx.worker) ctx.worker_modules.clear();
  std::vector<std::pair<Handle, std::shared_ptr<const std::string>>> ptx;
  Handle last_module = 0;  // handles start at 1
  {
    std::lock_guard<std::mutex> lock(ctx.mu);
    if (!ok(ctx.fault)) {
      for (size_t i = 0; i < works.size(); ++i) results[i] = {ctx.fault, 0};
      return works.size();
    }
    ctx.packet.clear({wire::Op::kLaunchBatch, 0, budget_ns, watchdog_ns, kBatchSliceNs, ctx.heap_bytes});
    // Each launch is checked as it goes in; the first that fails ends the
    // batch before it, or fails alone if it is the first.
    for (const Work* w : works) {
      const Launch& launch = std::get<Launch>(w->op);
      auto f = ctx.functions.find(launch.function);
      Status st = Status::kSuccess;
      if (f == ctx.functions.end()) {
        st = Status::kInvalidResourceHandle;
      } else if (launch.params.size() != f->second.param_bytes) {
        st = Status::kInvalidValue;
      } else {
        st = check_launch_config(launch.grid, launch.block, launch.shared_mem, f->second.max_threads);
      }
      if (!ok(st)) {
        if (ctx.packet.count() > 0) break;
        results[0] = {st, 0};
        return 1;
      }
      wire::Launch h;
      h.module = f->second.module;
      for (int i = 0; i < 3; ++i) {
        h.grid[i] = launch.grid[i];
        h.block[i] = launch.block[i];
        h.cluster[i] = static_cast<uint8_t>(launch.cluster[i]);  // 1..16: the front checked
      }
      h.shared_mem = launch.shared_mem;
      if (launch.cooperative) h.flags |= wire::kLaunchCooperative;
      h.modeled_ns = modeled_launch_ns(config_, launch.grid, launch.block);
      if (!ctx.packet.add(h, f->second.name, launch.params)) break;  // full: the rest later
      ctx.estimates.push_back(h.modeled_ns);
      // A batch is mostly one module's launches: look it up once per run.
      if (h.module != last_module && ctx.worker_modules.insert(last_module = h.module).second) {
        auto m = ctx.modules.find(h.module);
        if (m != ctx.modules.end() && m->second.ptx) ptx.emplace_back(h.module, m->second.ptx);
      }
    }
    symbols_version = ctx.symbols_version;
    if (!ctx.worker || ctx.worker_symbols_version != symbols_version) symbols = ctx.symbols();
    textures_version = ctx.textures_version;
    if (!ctx.worker || ctx.worker_textures_version != textures_version) {
      textures.reserve(ctx.textures.size());
      for (const auto& [handle, t] : ctx.textures) textures.push_back({wire::Op::kTexture, 0, handle, t.desc});
    }
  }
  const size_t sent = ctx.packet.count();

  if (!ctx.worker) {
    std::string error;
    const Status st = Worker::start(worker_spec_, ctx.arena->fd(), ctx.slot_base,
                                    ctx.arena->span(), kWorkerStartLimit, &ctx.worker, &error);
    if (!ok(st)) {
      spdlog::error("sim: context {}: cannot start its worker: {}", ctx.id, error);
      for (size_t i = 0; i < sent; ++i) results[i] = {Status::kLaunchFailure, 0};
      return sent;
    }
    ctx.worker_symbols_version = 0;
    ctx.worker_textures_version = 0;
  }
  if (ctx.worker_symbols_version != symbols_version) {
    ctx.worker->send_symbols(symbols);  // a worker that is gone shows at the launch
    ctx.worker_symbols_version = symbols_version;
  }
  if (ctx.worker_textures_version != textures_version) {
    ctx.worker->send_textures(textures);
    ctx.worker_textures_version = textures_version;
  }
  for (const auto& [module, text] : ptx) ctx.worker->send_ptx(module, *text);

  const uint64_t start = engine_now_ns();
  WorkerReply& reply = ctx.reply;
  ctx.worker->run(ctx.packet, start + kBatchSliceNs + watchdog_ns, &reply);

  if (reply.kind == WorkerReply::Kind::kTimeout) {
    ctx.worker.reset();
    spdlog::warn("sim: context {} (tenant {}): a kernel ({} in a batch of {}) ran past the {} ms "
                 "watchdog; worker killed, context faulted",
                 ctx.id, ctx.tenant, kernel_name(ctx, *works[0]), sent, config_.watchdog.count());
    // Which launch hung is unknown: those before it had finished within
    // kBatchSliceNs; all report the timeout, as the context is faulted anyway.
    const Status st = fault(ctx, Status::kLaunchTimeout);
    for (size_t i = 0; i < sent; ++i) results[i] = {st, 0};
    results[0].gpu_ns = engine_now_ns() - start;
    return sent;
  }

  // What they printed goes to the program (never to the daemon's log).
  if (!reply.printed.empty()) ctx.output.keep(1, reply.printed);
  if (!reply.errors.empty()) ctx.output.keep(2, reply.errors);
  // Once a kernel has used the device heap, its size is fixed (SetHeapSize).
  for (const wire::LaunchDone& done : reply.done) {
    if (done.flags & wire::kHeapUsed) {
      std::lock_guard<std::mutex> lock(ctx.mu);
      ctx.heap_used = true;
      break;
    }
  }

  // The launches the worker reported, then (if it died) the one it died in.
  const size_t reported = reply.kind == WorkerReply::Kind::kDone ? reply.done.size()
                          : reply.faulted                        ? reply.done.size()
                                                                 : 0;
  // Each launch's device time: its modeled duration, or the time its CPU
  // implementation ran if that was longer. The estimates become it.
  std::vector<uint64_t>& device = ctx.estimates;
  uint64_t device_total = 0;
  for (size_t i = 0; i < reported; ++i) {
    const wire::LaunchDone& done = reply.done[i];
    Status st = Status::kSuccess;
    uint64_t modeled = done.modeled_ns;
    switch (done.outcome) {
      case wire::Outcome::kOk:
        if (done.modeled_ns > watchdog_ns) {
          // A GPU would have run it until its watchdog fired.
          modeled = watchdog_ns;
          spdlog::warn("sim: context {} (tenant {}): kernel {} is modeled to run {} ns, past the "
                       "{} ms watchdog; context faulted",
                       ctx.id, ctx.tenant, kernel_name(ctx, *works[i]), done.modeled_ns,
                       config_.watchdog.count());
          st = fault(ctx, Status::kLaunchTimeout);
        }
        break;
      case wire::Outcome::kNoImplementation:
        modeled = 0;
        if (const std::string kernel = kernel_name(ctx, *works[i]);
            ctx.reported_missing.insert(kernel).second) {
          spdlog::warn("sim: context {}: no CPU implementation of kernel {}: no plug-in exports {}{}",
                       ctx.id, kernel, VGPU_SIM_SYMBOL_PREFIX, kernel);
          // The program's own stderr says it too: a student reads that, not
          // the daemon's log.
          // Say why the interpreter could not help: the worker said what it refused;
          // a module with no PTX at all (a cubin-only build) is said here.
          const char* interpreter = module_has_ptx(ctx, *works[i])
                                        ? "nor could its PTX be interpreted"
                                        : "nor could its PTX be interpreted: its module holds none, only "
                                          "cubins (a library's kernels, NVRTC's nvrtcGetCUBIN, or nvcc "
                                          "without a compute_XX target; or the PTX was over this VM's "
                                          "host memory for modules)";
          ctx.output.keep(2, fmt::format("vgpu: kernel {} has no CPU implementation on this host's "
                                         "sim backend (no plug-in exports {}{}, see "
                                         "--sim-kernels; {}); "
                                         "its launch fails with "
                                         "cudaErrorNoKernelImageForDevice\n",
                                         kernel, VGPU_SIM_SYMBOL_PREFIX, kernel, interpreter));
        }
        st = Status::kInvalidDeviceFunction;
        break;
      case wire::Outcome::kAssert:
        // The message is the program's (its stderr), not the daemon's log.
        modeled = 0;
        spdlog::info("sim: context {} (tenant {}): a device assert failed in kernel {}; context faulted",
                     ctx.id, ctx.tenant, kernel_name(ctx, *works[i]));
        st = fault(ctx, Status::kAssert);
        break;
      case wire::Outcome::kTrap:
        modeled = 0;
        spdlog::info("sim: context {} (tenant {}): kernel {} executed trap; context faulted", ctx.id,
                     ctx.tenant, kernel_name(ctx, *works[i]));
        st = fault(ctx, Status::kLaunchFailure);
        break;
      case wire::Outcome::kIllegalAddress:
        modeled = 0;
        spdlog::info("sim: context {} (tenant {}): kernel {} used a null pointer; context faulted", ctx.id,
                     ctx.tenant, kernel_name(ctx, *works[i]));
        st = fault(ctx, Status::kIllegalAddress);
        break;
      case wire::Outcome::kPluginError:
        modeled = 0;
        spdlog::warn("sim: context {}: kernel {} failed (plug-in returned {}); context faulted",
                     ctx.id, kernel_name(ctx, *works[i]), done.plugin_rc);
        st = fault(ctx, Status::kLaunchFailure);
        break;
      default:
        modeled = 0;
        spdlog::error("sim: context {}: worker rejected the launch of {}", ctx.id,
                      kernel_name(ctx, *works[i]));
        st = fault(ctx, Status::kLaunchFailure);
        break;
    }
    device[i] = std::max(modeled, done.ran_ns);
    results[i] = {st, device[i]};
    device_total += device[i];
  }
  size_t ran = reported;
  if (reply.kind == WorkerReply::Kind::kDied) {
    ctx.worker.reset();
    spdlog::warn("sim: context {} (tenant {}): kernel {} ended its worker ({}); context faulted",
                 ctx.id, ctx.tenant, kernel_name(ctx, *works[reported]), reply.detail);
    const Status st = fault(ctx, Status::kIllegalAddress);
    // The launch it died in is charged the rest of the batch's real time; the
    // rest of the batch did not run and would fail on the faulted context.
    const uint64_t elapsed = engine_now_ns() - start;
    results[reported] = {st, elapsed > device_total ? elapsed - device_total : 0};
    device_total += results[reported].gpu_ns;
    for (size_t i = reported + 1; i < sent; ++i) results[i] = {st, 0};
    ran = sent;
  }
  // The engine is busy for the device time of what ran, in real time. Each
  // launch is charged its own device time, not the real time the batch took:
  // on a loaded host the worker's reply or this thread's wake-up can come
  // late, and that is not the tenant's GPU time.
  engine_busy_until(start + device_total);
  return ran;
}

}  // namespace vgpu::executor::sim
