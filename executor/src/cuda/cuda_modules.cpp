// The cuda backend: modules (fat binaries parsed here, never trusted, and
// loaded by the worker's driver), their functions (looked up by device name,
// parameter layouts checked against the driver's) and their variables.
#include <sys/mman.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

#include "cuda_backend_impl.h"
#include "param_layout.h"

namespace vgpu::executor::cuda {
namespace {

bool names_fit(const fatbin::Module& m) {
  for (const fatbin::Kernel& k : m.kernels) {
    if (k.name.empty() || k.name.size() > wire::kMaxNameBytes) return false;
    if (k.param_bytes > wire::kMaxParamBytes || k.params.size() > wire::kMaxParams) return false;
  }
  for (const fatbin::Variable& v : m.variables) {
    if (v.name.empty() || v.name.size() > wire::kMaxNameBytes) return false;
  }
  return true;
}

std::span<const uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

WorkerProcess::Answer CudaBackend::load_image(WorkerProcess& w, Handle module,
                                              const std::vector<uint8_t>& bytes) {
  // The image reaches the worker as a sealed memfd: no size limit of the
  // socket, and nobody can change it underneath the driver.
  const int fd = memfd_create("vgpu-cuda-module", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  WorkerProcess::Answer failed;
  failed.link = WorkerProcess::Link::kOk;
  failed.reply.result = CUDA_ERROR_OUT_OF_MEMORY;
  if (fd < 0) return failed;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  if (done != bytes.size() ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    close(fd);
    return failed;
  }
  wire::Request req;
  req.op = wire::Op::kModuleLoad;
  req.a = module;
  req.b = bytes.size();
  auto a = w.control(req, {}, fd, call_deadline());
  close(fd);
  return a;
}

Status CudaBackend::fetch_variable(Context& ctx, const Call& call, Handle module,
                                   const std::string& name, uint64_t expected_size,
                                   uint64_t* dptr) {
  wire::Request req;
  req.op = wire::Op::kVarGet;
  req.a = module;
  const auto a = call.worker->control(req, as_bytes(name), -1, call_deadline());
  std::lock_guard<std::mutex> lock(ctx.mu);
  if (Status st = absorb(ctx, call, a, Status::kLaunchFailure, "a variable lookup"); !ok(st)) {
    return st;
  }
  auto m = ctx.modules.find(module);
  if (m == ctx.modules.end()) return Status::kInvalidResourceHandle;
  const uint64_t addr = a.reply.a, bytes = a.reply.b;
  if (expected_size != 0 && bytes != expected_size) {
    spdlog::warn("cuda: context {}: variable {} has {} bytes in the fat binary, {} in the driver",
                 ctx.id, name, expected_size, bytes);
    return Status::kInvalidValue;
  }
  if (auto known = m->second.variables.find(name);
      known != m->second.variables.end() && ctx.allocations.find_start(known->second)) {
    *dptr = known->second;  // someone else fetched it meanwhile
    return Status::kSuccess;
  }
  if (bytes == 0 || !ledger_.reserve(ctx.tenant, common::reserved_size(bytes))) {
    return Status::kMemoryAllocation;
  }
  if (!ctx.record(addr, bytes, AllocKind::kVariable)) {
    ledger_.release(ctx.tenant, common::reserved_size(bytes));
    spdlog::error("cuda: context {}: variable {} at {:#x} overlaps a live allocation", ctx.id,
                  name, addr);
    return Status::kUnknown;
  }
  m->second.variables[name] = addr;
  *dptr = addr;
  return Status::kSuccess;
}

Status CudaBackend::module_load(ContextId id, std::span<const uint8_t> bytes, Handle* out) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!out || bytes.empty()) return Status::kInvalidValue;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);  // fail fast before parsing
    if (!ok(ctx->fault)) return ctx->fault;
  }
  ModuleState module;
  const fatbin::Error err = fatbin::parse(bytes, &module.image, {config_.module_image_limit});
  if (err != fatbin::Error::kNone) {
    spdlog::warn("cuda: context {}: module rejected: {}", id, fatbin::error_name(err));
    return Status::kInvalidKernelImage;
  }
  if (!names_fit(module.image)) {
    spdlog::warn("cuda: context {}: module rejected: a name or parameter list is too long", id);
    return Status::kInvalidKernelImage;
  }
  // Only the fat binary itself is kept (a guest may send more after it), and
  // only once the tenant can pay for it.
  const uint64_t kept = fatbin::announced_size(bytes);
  if (!host_budget_->charge(ctx->tenant, fatbin::host_bytes(module.image) + kept, &module.charge)) {
    spdlog::warn("cuda: context {}: module refused: the tenant's modules would hold more than "
                 "{} MiB of host memory (--tenant-host-mib)", id, host_budget_->limit() >> 20);
    return Status::kMemoryAllocation;
  }
  module.bytes.assign(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(kept));
  module.state = common::HandleState::kPending;  // until loaded and its variables are known

  Call call;
  Handle h = 0;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (Status s = begin(*ctx, &call); !ok(s)) return s;
    if (ctx->modules.size() >= kMaxModules) return Status::kMemoryAllocation;
    h = ctx->new_handle();
    ctx->modules.emplace(h, std::move(module));
  }
  auto drop = [&](Status st) {
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (auto m = ctx->modules.find(h); m != ctx->modules.end()) {
      for (const auto& [name, addr] : m->second.variables) ctx->forget(ledger_, addr);
      ctx->modules.erase(m);
    }
    return st;
  };
  std::vector<uint8_t> image;
  std::vector<std::pair<std::string, uint64_t>> variables;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    const ModuleState& m = ctx->modules.at(h);
    image = m.bytes;
    for (const fatbin::Variable& v : m.image.variables) {
      if (v.size != 0) variables.emplace_back(v.name, v.size);  // size unknown: var_get sizes it
    }
  }
  const auto loaded = load_image(*call.worker, h, image);
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (Status st = absorb(*ctx, call, loaded, Status::kLaunchFailure, "a module load"); !ok(st)) {
      ctx->modules.erase(h);
      if (ok(ctx->fault)) {
        spdlog::warn("cuda: context {}: the driver refused a module: {}", id, status_name(st));
      }
      return st;
    }
  }
  // Variables live as long as the module and are charged to the tenant, as
  // in sim; asking now also lets the worker keep their initial bytes (for
  // reset).
  for (const auto& [name, size] : variables) {
    uint64_t addr = 0;
    if (Status st = fetch_variable(*ctx, call, h, name, size, &addr); !ok(st)) {
      if (st == Status::kMemoryAllocation || st == Status::kInvalidValue) {
        wire::Request unload;
        unload.op = wire::Op::kUnloadModule;
        unload.a = h;
        call.worker->control(unload, {}, -1, call_deadline());
      }
      return drop(st);
    }
  }
  std::lock_guard<std::mutex> lock(ctx->mu);
  auto m = ctx->modules.find(h);
  if (m == ctx->modules.end()) return ok(ctx->fault) ? Status::kLaunchFailure : ctx->fault;
  m->second.state = common::HandleState::kLive;
  *out = h;
  return Status::kSuccess;
}

Status CudaBackend::function_get(ContextId id, Handle module, std::string_view name, Handle* out,
                                 FunctionInfo* info) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!out || !info) return Status::kInvalidValue;
  Call call;
  fatbin::Kernel kernel;
  Handle h = 0;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (Status s = begin(*ctx, &call); !ok(s)) return s;
    auto m = ctx->modules.find(module);
    if (m == ctx->modules.end() || m->second.state != common::HandleState::kLive) return Status::kInvalidResourceHandle;
    const fatbin::Kernel* k = m->second.image.find_kernel(name);
    if (!k) return Status::kInvalidDeviceFunction;
    info->param_count = static_cast<uint32_t>(k->params.size());
    info->param_bytes = k->param_bytes;
    if (auto known = m->second.functions.find(name); known != m->second.functions.end()) {
      *out = known->second;
      return Status::kSuccess;
    }
    kernel = *k;
    h = ctx->new_handle();
  }
  wire::Request req;
  req.op = wire::Op::kFunctionGet;
  req.a = module;
  req.b = h;
  const auto a = call.worker->control(req, as_bytes(kernel.name), -1, call_deadline());
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (Status st = absorb(*ctx, call, a, Status::kLaunchFailure, "a kernel lookup"); !ok(st)) {
    return st == Status::kSymbolNotFound ? Status::kInvalidDeviceFunction : st;
  }
  auto m = ctx->modules.find(module);
  if (m == ctx->modules.end() || m->second.state != common::HandleState::kLive) return Status::kInvalidResourceHandle;
  if (a.reply.a != 0) {  // the driver told its layout: it must be the fat binary's
    std::vector<wire::ParamSlot> slots(a.reply.count);
    if (a.tail.size() != slots.size() * sizeof(wire::ParamSlot)) return Status::kUnknown;
    if (!a.tail.empty()) std::memcpy(slots.data(), a.tail.data(), a.tail.size());
    if (std::string diff = compare_layouts(kernel, slots); !diff.empty()) {
      spdlog::warn("cuda: context {}: kernel {}: the fat binary's parameter layout is not the "
                   "driver's ({}); refused",
                   id, kernel.name, diff);
      return Status::kInvalidKernelImage;
    }
  } else if (!warned_no_param_info_.exchange(true)) {
    spdlog::warn("cuda: the driver has no cuFuncGetParamInfo: kernel parameter layouts come from "
                 "the fat binaries alone");
  }
  if (auto known = m->second.functions.find(kernel.name); known != m->second.functions.end()) {
    *out = known->second;  // another thread got there first
    return Status::kSuccess;
  }
  FunctionState f;
  f.module = module;
  f.name = kernel.name;
  f.param_count = info->param_count;
  f.param_bytes = info->param_bytes;
  ctx->functions.emplace(h, std::move(f));
  m->second.functions.emplace(kernel.name, h);
  *out = h;
  return Status::kSuccess;
}

Status CudaBackend::var_get(ContextId id, Handle module, std::string_view name, uint64_t size,
                            uint64_t* dptr) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!dptr) return Status::kInvalidValue;
  Call call;
  std::string var_name;
  uint64_t expected = 0;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (Status s = begin(*ctx, &call); !ok(s)) return s;
    auto m = ctx->modules.find(module);
    if (m == ctx->modules.end() || m->second.state != common::HandleState::kLive) return Status::kInvalidResourceHandle;
    const fatbin::Variable* v = m->second.image.find_variable(name);
    if (!v) return Status::kInvalidSymbol;
    if (v->size != 0 && size != 0 && size != v->size) {
      spdlog::warn("cuda: context {}: variable {} registered with {} bytes, the module says {}", id,
                   v->name, size, v->size);
      return Status::kInvalidValue;
    }
    if (auto known = m->second.variables.find(name); known != m->second.variables.end()) {
      *dptr = known->second;
      return Status::kSuccess;
    }
    var_name = v->name;
    expected = v->size != 0 ? v->size : size;
  }
  const Status st = fetch_variable(*ctx, call, module, var_name, expected, dptr);
  return st == Status::kSymbolNotFound ? Status::kInvalidSymbol : st;
}

Status CudaBackend::func_attributes(ContextId id, Handle function, FunctionAttributes* out) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!out) return Status::kInvalidValue;
  Call call;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (Status s = begin(*ctx, &call); !ok(s)) return s;
    auto f = ctx->functions.find(function);
    if (f == ctx->functions.end()) return Status::kInvalidResourceHandle;
    if (f->second.have_attributes) {
      *out = f->second.attributes;
      return Status::kSuccess;
    }
  }
  wire::Request req;
  req.op = wire::Op::kFuncAttributes;
  req.a = function;
  const auto a = call.worker->control(req, {}, -1, call_deadline());
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (Status st = absorb(*ctx, call, a, Status::kLaunchFailure, "a kernel attribute query");
      !ok(st)) {
    return st;
  }
  wire::Attributes w;
  if (a.tail.size() != sizeof w) return Status::kUnknown;
  std::memcpy(&w, a.tail.data(), sizeof w);
  FunctionAttributes attrs;
  attrs.shared_size_bytes = static_cast<uint64_t>(std::max(0, w.shared_size_bytes));
  attrs.const_size_bytes = static_cast<uint64_t>(std::max(0, w.const_size_bytes));
  attrs.local_size_bytes = static_cast<uint64_t>(std::max(0, w.local_size_bytes));
  attrs.max_threads_per_block = w.max_threads_per_block;
  attrs.num_regs = w.num_regs;
  attrs.ptx_version = w.ptx_version;
  attrs.binary_version = w.binary_version;
  if (auto f = ctx->functions.find(function); f != ctx->functions.end()) {
    f->second.attributes = attrs;
    f->second.have_attributes = true;
  }
  *out = attrs;
  return Status::kSuccess;
}

}  // namespace vgpu::executor::cuda
