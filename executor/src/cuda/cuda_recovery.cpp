// The cuda backend: cudaDeviceReset. A healthy context resets inside its
// worker (user memory freed, events destroyed, variables back to their
// initial bytes). A context whose worker was lost (a sticky error, the
// watchdog, a crash) gets a fresh worker, and its modules are loaded into it
// again, so the handles the guest holds (modules, functions) stay valid.
// Variables may land at new addresses then; the guest's runtime asks again
// only if it never asked before, so a moved variable is logged.
#include <spdlog/spdlog.h>

#include "cuda_backend_impl.h"

namespace vgpu::executor::cuda {

Status CudaBackend::reset(Context& ctx) {
  Call call;
  {
    std::lock_guard<std::mutex> lock(ctx.mu);
    if (ok(ctx.fault) && ctx.worker) {
      call.worker = ctx.worker;
      call.generation = ctx.generation;
    }
  }
  if (call.worker) {
    wire::Request req;
    req.op = wire::Op::kReset;
    const auto a = call.worker->work(req, {}, work_deadline());
    std::lock_guard<std::mutex> lock(ctx.mu);
    if (ok(absorb(ctx, call, a, Status::kLaunchTimeout, "a device reset"))) {
      ctx.forget_user_state(ledger_);
      return Status::kSuccess;
    }
    // The reset itself lost the worker: start over below.
  }
  std::unique_ptr<WorkerProcess> w;
  StartFailure failure;
  if (!ok(pool_.take(&w, &failure))) {
    spdlog::error("cuda: context {} (tenant {}): no worker to reset into: {}", ctx.id, ctx.tenant,
                  failure.why);
    std::lock_guard<std::mutex> lock(ctx.mu);
    return ctx.fault;  // still faulted; a later reset tries again
  }
  return replay(ctx, std::move(w));
}

Status CudaBackend::replay(Context& ctx, std::shared_ptr<WorkerProcess> fresh) {
  struct ModuleCopy {
    Handle handle;
    std::vector<uint8_t> bytes;
    std::vector<std::pair<std::string, Handle>> functions;
    std::vector<std::pair<std::string, uint64_t>> variables;  // name, old address
  };
  std::vector<ModuleCopy> modules;
  {
    std::lock_guard<std::mutex> lock(ctx.mu);
    // Only this (the dispatcher) thread changes the module table of a
    // faulted context: it stays as copied here.
    for (const auto& [h, m] : ctx.modules) {
      ModuleCopy c{h, m.bytes, {}, {}};
      c.functions.assign(m.functions.begin(), m.functions.end());
      c.variables.assign(m.variables.begin(), m.variables.end());
      modules.push_back(std::move(c));
    }
  }
  auto fail = [&](const std::string& what, const WorkerProcess::Answer& a) {
    fresh->kill("replay failed");
    spdlog::error("cuda: context {} (tenant {}): reset: {} failed in the fresh worker ({}); the "
                  "context stays unusable",
                  ctx.id, ctx.tenant, what,
                  a.link == WorkerProcess::Link::kOk
                      ? status_name(static_cast<Status>(a.reply.result))
                      : "worker lost");
    std::lock_guard<std::mutex> lock(ctx.mu);
    return ctx.fault;
  };
  std::vector<std::tuple<Handle, std::string, uint64_t, uint64_t, uint64_t>> moved;  // module, name, old, new, bytes
  for (const ModuleCopy& m : modules) {
    auto a = load_image(*fresh, m.handle, m.bytes);
    if (a.link != WorkerProcess::Link::kOk || a.reply.result != CUDA_SUCCESS) {
      return fail("loading a module", a);
    }
    for (const auto& [name, fn] : m.functions) {
      wire::Request req;
      req.op = wire::Op::kFunctionGet;
      req.a = m.handle;
      req.b = fn;
      a = fresh->control(req, {reinterpret_cast<const uint8_t*>(name.data()), name.size()}, -1,
                         call_deadline());
      if (a.link != WorkerProcess::Link::kOk || a.reply.result != CUDA_SUCCESS) {
        return fail("looking up kernel " + name, a);
      }
    }
    for (const auto& [name, old] : m.variables) {
      wire::Request req;
      req.op = wire::Op::kVarGet;
      req.a = m.handle;
      a = fresh->control(req, {reinterpret_cast<const uint8_t*>(name.data()), name.size()}, -1,
                         call_deadline());
      if (a.link != WorkerProcess::Link::kOk || a.reply.result != CUDA_SUCCESS) {
        return fail("looking up variable " + name, a);
      }
      moved.emplace_back(m.handle, name, old, a.reply.a, a.reply.b);
    }
  }
  bool have_area = false;
  {
    std::lock_guard<std::mutex> lock(ctx.mu);
    have_area = ctx.area.fd >= 0;
  }
  const bool registered = have_area && register_area(ctx, *fresh);  // or copies go through staging
  std::lock_guard<std::mutex> lock(ctx.mu);
  ctx.area.registered = registered;
  ctx.forget_device_state(ledger_);  // what the lost worker held (already, unless the reset lost it)
  for (const auto& [module, name, old, now, bytes] : moved) {
    auto m = ctx.modules.find(module);
    if (m == ctx.modules.end()) continue;
    // Charged again as at load; a tenant that lowered its room meanwhile
    // keeps the module, but the host cannot address that variable.
    if (!ledger_.reserve(ctx.tenant, common::reserved_size(bytes))) {
      spdlog::warn("cuda: context {}: after the reset, variable {} does not fit the tenant's cap",
                   ctx.id, name);
      continue;
    }
    if (!ctx.record(now, bytes, AllocKind::kVariable)) {
      ledger_.release(ctx.tenant, common::reserved_size(bytes));
      continue;
    }
    m->second.variables[name] = now;
    if (now != old) {
      spdlog::warn("cuda: context {}: after the reset, variable {} is at {:#x} (was {:#x}); a "
                   "guest that kept the old address gets cudaErrorInvalidValue",
                   ctx.id, name, now, old);
    }
  }
  ctx.worker = std::move(fresh);
  ++ctx.generation;
  ctx.fault = Status::kSuccess;
  spdlog::info("cuda: context {} (tenant {}): reset into a fresh worker (pid {}), {} module(s) "
               "loaded again",
               ctx.id, ctx.tenant, ctx.worker->pid(), modules.size());
  return Status::kSuccess;
}

}  // namespace vgpu::executor::cuda
