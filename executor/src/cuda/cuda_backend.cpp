// The cuda backend: factory, contexts, limits, memory, streams and events.
#include "vgpu/executor/cuda_backend.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <new>
#include <system_error>

#include <driver_types.h>  // cudaDeviceAttr names only
#include <spdlog/spdlog.h>

#include "common/backend_stats.h"
#include "common/heap_charge.h"
#include "common/worker_path.h"
#include "cu_status.h"
#include "cuda_backend_impl.h"

namespace vgpu::executor {

namespace {

constexpr uint64_t kMinSlotBytes = 64 * 1024;
constexpr uint64_t kMaxSlotBytes = 1ull << 30;

bool parse_u64(const char* s, uint64_t* out) {
  if (!s || !*s || *s == '-') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

}  // namespace

Status apply_cuda_env(CudaConfig* config, std::string* why) {
  struct Number {
    const char* name;
    uint64_t max;
    std::function<void(uint64_t)> set;
  };
  const Number numbers[] = {
      {"VGPU_CUDA_DEVICE", 1 << 16, [&](uint64_t v) { config->device = static_cast<int>(v); }},
      {"VGPU_CUDA_WATCHDOG_MS", 24ull * 3600 * 1000,
       [&](uint64_t v) { config->watchdog = std::chrono::milliseconds(v); }},
      {"VGPU_CUDA_SPARE_WORKERS", 64, [&](uint64_t v) { config->spare_workers = v; }},
      {"VGPU_CUDA_STAGING_KIB", 1 << 20, [&](uint64_t v) { config->staging_slot_bytes = v << 10; }},
      {"VGPU_CUDA_MEMORY_MIB", 1ull << 30, [&](uint64_t v) { config->device_memory = v << 20; }},
  };
  for (const Number& n : numbers) {
    const char* s = std::getenv(n.name);
    if (!s) continue;
    uint64_t v = 0;
    if (!parse_u64(s, &v) || v > n.max) {
      *why = std::string(n.name) + "='" + s + "' is not a number up to " + std::to_string(n.max);
      return Status::kInvalidValue;
    }
    n.set(v);
  }
  if (const char* s = std::getenv("VGPU_CUDA_DRIVER"); s && *s) config->driver_library = s;
  if (const char* s = std::getenv("VGPU_CUDA_WORKER"); s && *s) config->worker_path = s;
  if (const char* s = std::getenv("VGPU_CUDA_WAIT")) {
    if (std::strcmp(s, "spin") == 0) {
      config->spin_wait = true;
    } else if (std::strcmp(s, "block") == 0) {
      config->spin_wait = false;
    } else {
      *why = std::string("VGPU_CUDA_WAIT='") + s + "' must be spin or block";
      return Status::kInvalidValue;
    }
  }
  return Status::kSuccess;
}

Status make_cuda_backend(const CudaConfig& config, std::unique_ptr<Backend>* out, std::string* why) {
  if (!out || !why) return Status::kInvalidValue;
  try {
    if (config.device < 0 || config.watchdog.count() <= 0 || config.call_limit.count() <= 0 ||
        config.start_limit.count() <= 0 || config.staging_slot_bytes < kMinSlotBytes ||
        config.staging_slot_bytes > kMaxSlotBytes || config.staging_slot_bytes % 4096 != 0) {
      *why = "invalid configuration (device " + std::to_string(config.device) +
             ", watchdog " + std::to_string(config.watchdog.count()) + " ms, staging slot " +
             std::to_string(config.staging_slot_bytes) + " bytes: a multiple of 4 KiB from 64 KiB to 1 GiB)";
      return Status::kInvalidValue;
    }
    cuda::WorkerSpec spec;
    spec.path = config.worker_path.empty() ? default_worker_path("vgpu-cuda-worker") : config.worker_path;
    spec.driver = config.driver_library;
    spec.device = config.device;
    spec.ctx_flags = config.spin_wait ? CU_CTX_SCHED_SPIN : CU_CTX_SCHED_BLOCKING_SYNC;
    spec.slot_bytes = config.staging_slot_bytes;
    spec.pin = config.pin_staging;
    if (access(spec.path.c_str(), X_OK) != 0) {
      *why = "worker executable " + spec.path + " not found or not executable";
      return Status::kInitializationError;
    }
    cuda::wire::DeviceReport report;
    cuda::StartFailure failure;
    if (Status st = cuda::WorkerProcess::probe(spec, config.start_limit, &report, &failure); !ok(st)) {
      *why = failure.why;
      return st;
    }
    // Leave the contexts' own memory (code, stacks, printf buffer) room by
    // default: a sixteenth of the device.
    const uint64_t shared =
        config.device_memory != 0 ? std::min(config.device_memory, report.total_memory)
                                  : report.total_memory - report.total_memory / 16;
    auto backend = std::make_unique<cuda::CudaBackend>(config, spec,
                                                       cuda::device_info_from(report, shared));
    spdlog::info("cuda: device {} '{}', {} MiB ({} MiB shared out), driver {}, watchdog {} ms, "
                 "{} KiB x2 staging per context, {} spare worker(s)",
                 config.device, backend->device().name, report.total_memory >> 20, shared >> 20,
                 report.driver_version, config.watchdog.count(), config.staging_slot_bytes >> 10,
                 config.spare_workers);
    *out = std::move(backend);
    return Status::kSuccess;
  } catch (const std::bad_alloc&) {
    *why = "out of memory";
    return Status::kMemoryAllocation;
  } catch (const std::system_error& e) {  // a thread that cannot start
    *why = e.what();
    return Status::kInitializationError;
  }
}

namespace cuda {

DeviceInfo device_info_from(const wire::DeviceReport& report, uint64_t shared_memory) {
  DeviceInfo info;
  info.name.assign(report.name, strnlen(report.name, sizeof report.name));
  std::memcpy(info.uuid.data(), report.uuid, info.uuid.size());
  info.total_memory = shared_memory;
  info.driver_version = report.driver_version;
  static_assert(wire::kAttributeCount == kDeviceAttributeCount);
  std::copy(std::begin(report.attributes), std::end(report.attributes), info.attributes.begin());
  // Kernels have a run-time limit here: the watchdog.
  info.attributes[static_cast<size_t>(cudaDevAttrKernelExecTimeout)] = 1;
  return info;
}

CudaBackend::CudaBackend(const CudaConfig& config, const WorkerSpec& spec, DeviceInfo device)
    : config_(config),
      device_(std::move(device)),
      ledger_(device_.total_memory),
      host_budget_(common::HostBudget::create(config.tenant_host_limit)),
      pool_(spec, &reaper_, config.spare_workers, config.start_limit) {}

CudaBackend::~CudaBackend() {
  // Workers first (killed, handed to the reaper), then the pool's spares,
  // then the reaper waits for them all.
  for (const auto& ctx : contexts_.take_all()) {
    std::lock_guard<std::mutex> cl(ctx->mu);
    if (ctx->worker) ctx->worker->kill("the backend is stopping");
    ctx->worker.reset();
  }
}

uint64_t CudaBackend::call_deadline() const {
  return monotonic_ns() + static_cast<uint64_t>(config_.call_limit.count()) * 1'000'000ull;
}

uint64_t CudaBackend::work_deadline() const {
  return monotonic_ns() + static_cast<uint64_t>(config_.watchdog.count()) * 1'000'000ull;
}

Status CudaBackend::begin(Context& ctx, Call* call) {
  if (!ok(ctx.fault)) return ctx.fault;
  if (!ctx.worker) return Status::kLaunchFailure;  // cannot happen while healthy
  call->worker = ctx.worker;
  call->generation = ctx.generation;
  return Status::kSuccess;
}

void CudaBackend::lose_worker(Context& ctx, Status status, const std::string& why) {
  if (ctx.worker) ctx.worker->kill(why);
  ctx.worker.reset();
  ++ctx.generation;
  ctx.set_fault(status);
  ctx.forget_device_state(ledger_);
}

Status CudaBackend::absorb(Context& ctx, const Call& call, const WorkerProcess::Answer& a,
                           Status timeout_status, std::string_view what) {
  if (call.generation != ctx.generation) {
    return ok(ctx.fault) ? Status::kLaunchFailure : ctx.fault;  // its worker is gone
  }
  switch (a.link) {
    case WorkerProcess::Link::kTimedOut: {
      const bool work = timeout_status == Status::kLaunchTimeout;
      const auto limit = work ? config_.watchdog : config_.call_limit;
      spdlog::warn("cuda: context {} (tenant {}): {} ran past the {} ms {}; its context was ended "
                   "and the tenant gets {}",
                   ctx.id, ctx.tenant, what, limit.count(), work ? "watchdog" : "call limit",
                   status_name(timeout_status));
      lose_worker(ctx, timeout_status, "watchdog");
      return timeout_status;
    }
    case WorkerProcess::Link::kGone:
      spdlog::warn("cuda: context {} (tenant {}): its worker ended during {}; context lost",
                   ctx.id, ctx.tenant, what);
      lose_worker(ctx, Status::kLaunchFailure, "ended");
      return Status::kLaunchFailure;
    case WorkerProcess::Link::kOk:
      break;
  }
  const auto r = static_cast<CUresult>(a.reply.result);
  if (a.reply.sticky || is_sticky(r)) {
    const Status s = r == CUDA_SUCCESS ? Status::kLaunchFailure : to_status(r);
    spdlog::warn("cuda: context {} (tenant {}): {} failed with {}; the context is unusable, its "
                 "worker ended (the tenant resets to go on)",
                 ctx.id, ctx.tenant, what, status_name(s));
    lose_worker(ctx, s, "sticky error");
    return s;
  }
  return to_status(r);
}

// --- contexts ------------------------------------------------------------------

Status CudaBackend::create_context(TenantId tenant, ContextId* out) {
  if (!out) return Status::kInvalidValue;
  std::unique_ptr<WorkerProcess> w;
  StartFailure failure;
  if (!ok(pool_.take(&w, &failure))) {
    spdlog::error("cuda: no worker for a new context of tenant {}: {}", tenant, failure.why);
    return Status::kInitializationError;
  }
  const ContextId id = contexts_.next_id();
  auto ctx = std::make_shared<Context>(id, tenant, contexts_.seed());
  ctx->worker = std::move(w);
  spdlog::debug("cuda: context {} of tenant {} in worker pid {}", id, tenant, ctx->worker->pid());
  contexts_.add(id, std::move(ctx));
  *out = id;
  return Status::kSuccess;
}

void CudaBackend::destroy_context(ContextId id) {
  const std::shared_ptr<Context> ctx = contexts_.take(id);
  if (!ctx) return;
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (ctx->worker) ctx->worker->kill("context released");  // the driver frees its memory
  ctx->worker.reset();
  ++ctx->generation;
  ctx->forget_device_state(ledger_);
}

bool CudaBackend::register_area(Context& ctx, WorkerProcess& worker) {
  int fd = -1;
  wire::Request req;
  req.op = wire::Op::kAttachArea;
  {
    std::lock_guard<std::mutex> lock(ctx.mu);
    fd = ctx.area.fd;
    req.a = ctx.area.offset;
    req.b = ctx.area.bytes.size();
  }
  const auto a = worker.control(req, {}, fd, call_deadline());
  const bool ok = a.link == WorkerProcess::Link::kOk && a.reply.result == CUDA_SUCCESS;
  if (!ok && !warned_no_area_.exchange(true)) {
    spdlog::warn(
        "cuda: the driver did not register a data area ({}): copies go through the "
        "staging area",
        a.link == WorkerProcess::Link::kOk
            ? status_name(to_status(static_cast<CUresult>(a.reply.result)))
            : "worker lost");
  }
  return ok;
}

Status CudaBackend::attach_data_area(ContextId id, int fd, uint64_t offset,
                                     std::span<uint8_t> area) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (fd < 0 || area.empty()) return Status::kInvalidValue;
  const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return Status::kMemoryAllocation;  // out of descriptors
  Call call;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (ctx->area.fd >= 0) {
      ::close(copy);
      return Status::kInvalidValue;  // once
    }
    ctx->area.bytes = area;
    ctx->area.fd = copy;
    ctx->area.offset = offset;
    if (Status s = begin(*ctx, &call); !ok(s)) return s;
  }
  const bool registered = register_area(*ctx, *call.worker);
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (call.generation != ctx->generation) return ctx->fault;  // a fresh worker registers it again
  ctx->area.registered = registered;
  return registered ? Status::kSuccess : Status::kNotSupported;
}

// --- tenant limits -------------------------------------------------------------

void CudaBackend::set_memory_cap(TenantId tenant, uint64_t bytes) { ledger_.set_cap(tenant, bytes); }

TenantMemory CudaBackend::tenant_memory(TenantId tenant) const { return ledger_.get(tenant); }

uint64_t CudaBackend::context_bytes(ContextId id) const {
  auto ctx = find(id);
  if (!ctx) return 0;
  std::lock_guard<std::mutex> lock(ctx->mu);
  return ctx->allocations.reserved_bytes() + common::heap_charge(ctx->heap_bytes);  // the heap is its memory too
}

BackendStats CudaBackend::stats() const {
  BackendStats s = common::collect_stats(contexts_.all(), ledger_);
  s.staged_copy_bytes = staged_bytes_.load();
  s.direct_copy_bytes = direct_bytes_.load();
  return s;
}

// --- memory --------------------------------------------------------------------

Status CudaBackend::mem_alloc(ContextId id, uint64_t size, uint64_t* dptr) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!dptr) return Status::kInvalidValue;
  Call call;
  const uint64_t reserved = common::reserved_size(size);
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (Status s = begin(*ctx, &call); !ok(s)) return s;
    if (size == 0) {  // cudaMalloc(&p, 0): success, NULL
      *dptr = 0;
      return Status::kSuccess;
    }
    if (reserved == 0 || ctx->allocations.count() >= kMaxAllocations) return Status::kMemoryAllocation;
    if (!ledger_.reserve(ctx->tenant, reserved)) return Status::kMemoryAllocation;
  }
  wire::Request req;
  req.op = wire::Op::kAlloc;
  req.a = size;
  const auto a = call.worker->control(req, {}, -1, call_deadline());
  std::lock_guard<std::mutex> lock(ctx->mu);
  Status st = absorb(*ctx, call, a, Status::kLaunchFailure, "an allocation");
  if (ok(st) && !ctx->record(a.reply.a, size, AllocKind::kUser)) {
    spdlog::error("cuda: context {}: the driver returned {:#x}, inside a live allocation", id,
                  a.reply.a);
    st = Status::kUnknown;
  }
  if (!ok(st)) {
    ledger_.release(ctx->tenant, reserved);
    return st;
  }
  *dptr = a.reply.a;
  return Status::kSuccess;
}

Status CudaBackend::mem_info(ContextId id, uint64_t* free, uint64_t* total) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!free || !total) return Status::kInvalidValue;
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (!ok(ctx->fault)) return ctx->fault;
  // The tenant's view: its cap is its device, its use is what it holds; free
  // is what an allocation could still get (also bounded by what the other
  // tenants left of the shared memory).
  *total = ledger_.visible_total(ctx->tenant);
  *free = std::min(*total, ledger_.available(ctx->tenant));
  return Status::kSuccess;
}

// A kernel's printf on a GPU is written by the driver in the context's
// worker process, to its stdout: a file the backend drains after each work
// item (keep_output), so it reaches this context's program only.
Status CudaBackend::take_device_output(ContextId id, int stream, std::span<uint8_t> dst, uint64_t* bytes,
                                       uint64_t* dropped) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (stream != 1 && stream != 2) return Status::kInvalidValue;
  ctx->output.take(stream, dst, bytes, dropped);
  return Status::kSuccess;
}

// --- texture objects ---------------------------------------------------------------

namespace {

// What a GPU's texture unit reads straight from device memory: a texture
// over linear memory, pitched memory, or a 2D array (pitched, as the guest
// lays arrays out: texture.h). Other arrays and surfaces need the driver's
// own CUDA arrays, which this backend does not make.
bool device_memory_texture(const TextureDesc& d) {
  if (d.object != TextureDesc::Object::kTexture) return false;
  if (d.resource == TextureDesc::Resource::kLinear || d.resource == TextureDesc::Resource::kPitch2D) return true;
  return d.resource == TextureDesc::Resource::kArray && d.height > 0 && d.depth == 0 &&
         !(d.array_flags & (TextureDesc::kLayered | TextureDesc::kCubemap));
}

void describe_for_driver(const TextureDesc& d, CUDA_RESOURCE_DESC* res, CUDA_TEXTURE_DESC* tex) {
  *res = {};
  const auto format = static_cast<CUarray_format>(d.format);
  if (d.resource == TextureDesc::Resource::kLinear) {
    res->resType = CU_RESOURCE_TYPE_LINEAR;
    res->res.linear.devPtr = d.base;
    res->res.linear.format = format;
    res->res.linear.numChannels = d.channels;
    res->res.linear.sizeInBytes = resource_bytes(d);
  } else {
    res->resType = CU_RESOURCE_TYPE_PITCH2D;
    res->res.pitch2D.devPtr = d.base;
    res->res.pitch2D.format = format;
    res->res.pitch2D.numChannels = d.channels;
    res->res.pitch2D.width = d.width;
    res->res.pitch2D.height = d.height;
    res->res.pitch2D.pitchInBytes = row_pitch(d);
  }
  *tex = {};
  for (int i = 0; i < 3; ++i) tex->addressMode[i] = static_cast<CUaddress_mode>(d.address[i]);
  tex->filterMode = static_cast<CUfilter_mode>(d.filter);
  tex->mipmapFilterMode = static_cast<CUfilter_mode>(d.mipmap_filter);
  tex->flags = d.read_flags;
  for (int i = 0; i < 4; ++i) tex->borderColor[i] = d.border[i];
  tex->mipmapLevelBias = d.mipmap_bias;
  tex->minMipmapLevelClamp = d.min_lod;
  tex->maxMipmapLevelClamp = d.max_lod;
}

}  // namespace

Status CudaBackend::texture_create(ContextId id, const TextureDesc& d, Handle* out) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!out) return Status::kInvalidValue;
  std::string why;
  if (!texture_check(d, &why)) {
    spdlog::debug("cuda: context {}: texture refused: {}", id, why);
    return Status::kInvalidValue;
  }
  if (!device_memory_texture(d)) return Status::kNotSupported;
  Call call;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (Status s = begin(*ctx, &call); !ok(s)) return s;
    if (Status s = common::check_texture_room(*ctx, d); !ok(s)) return s;
  }
  CUDA_RESOURCE_DESC res;
  CUDA_TEXTURE_DESC tex;
  describe_for_driver(d, &res, &tex);
  uint8_t tail[sizeof res + sizeof tex];
  std::memcpy(tail, &res, sizeof res);
  std::memcpy(tail + sizeof res, &tex, sizeof tex);
  wire::Request req;
  req.op = wire::Op::kTextureCreate;
  const auto a = call.worker->control(req, tail, -1, call_deadline());
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (Status st = absorb(*ctx, call, a, Status::kLaunchFailure, "a texture creation"); !ok(st)) return st;
  // The driver's handle is what kernels take: the table keeps it as it is.
  ctx->textures.emplace(a.reply.a, common::TextureState{d, common::HandleState::kLive});
  *out = a.reply.a;
  return Status::kSuccess;
}

// --- streams and events --------------------------------------------------------

Status CudaBackend::stream_create(ContextId id, uint32_t flags, int32_t priority, Handle* out) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!out || (flags & ~common::kStreamNonBlocking) != 0) return Status::kInvalidValue;
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (!ok(ctx->fault)) return ctx->fault;
  if (ctx->streams.size() >= kMaxStreams) return Status::kMemoryAllocation;
  // Streams are the daemon's bookkeeping: the context's work runs in order,
  // one item at a time, on the worker's one stream.
  const int32_t least = device_.attributes[static_cast<size_t>(cudaDevAttrStreamPrioritiesSupported)]
                            ? -5 : 0;
  StreamState s;
  s.flags = flags;
  s.priority = std::clamp(priority, least, 0);
  const Handle h = ctx->new_handle();
  ctx->streams.emplace(h, s);
  *out = h;
  return Status::kSuccess;
}

Status CudaBackend::stream_query(ContextId id, Handle stream) {
  auto ctx = find(id);
  return ctx ? common::query_stream(*ctx, stream) : Status::kInvalidResourceHandle;
}

Status CudaBackend::event_create(ContextId id, uint32_t flags, Handle* out) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!out || !common::valid_event_flags(flags)) return Status::kInvalidValue;
  Call call;
  Handle h = 0;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (Status s = begin(*ctx, &call); !ok(s)) return s;
    if (ctx->events.size() >= kMaxEvents) return Status::kMemoryAllocation;
    h = ctx->new_handle();
    EventState e;
    e.flags = flags;
    e.state = common::HandleState::kPending;  // until the worker has it
    ctx->events.emplace(h, e);
  }
  wire::Request req;
  req.op = wire::Op::kEventCreate;
  req.a = h;
  // Interprocess handles do not leave the worker; the other flags mean the same to the driver.
  req.value = flags & ~common::kEventInterprocess;
  const auto a = call.worker->control(req, {}, -1, call_deadline());
  std::lock_guard<std::mutex> lock(ctx->mu);
  const Status st = absorb(*ctx, call, a, Status::kLaunchFailure, "an event creation");
  auto it = ctx->events.find(h);
  if (!ok(st)) {
    if (it != ctx->events.end()) ctx->events.erase(it);
    return st;
  }
  if (it == ctx->events.end()) return ok(ctx->fault) ? Status::kLaunchFailure : ctx->fault;
  it->second.state = common::HandleState::kLive;
  *out = h;
  return Status::kSuccess;
}

Status CudaBackend::event_query(ContextId id, Handle event) {
  auto ctx = find(id);
  return ctx ? common::query_event(*ctx, event) : Status::kInvalidResourceHandle;
}

Status CudaBackend::event_elapsed(ContextId id, Handle start, Handle end, int64_t* ns) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!ns) return Status::kInvalidValue;
  Call call;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (Status s = begin(*ctx, &call); !ok(s)) return s;
    auto a = ctx->events.find(start);
    auto b = ctx->events.find(end);
    if (a == ctx->events.end() || b == ctx->events.end()) return Status::kInvalidResourceHandle;
    const EventState& s = a->second;
    const EventState& e = b->second;
    if ((s.flags | e.flags) & common::kEventDisableTiming) return Status::kInvalidResourceHandle;
    if (s.pending > 0 || e.pending > 0) return Status::kNotReady;
    if (!s.recorded || !e.recorded) return Status::kInvalidResourceHandle;
  }
  wire::Request req;
  req.op = wire::Op::kEventElapsed;
  req.a = start;
  req.b = end;
  const auto a = call.worker->control(req, {}, -1, call_deadline());
  std::lock_guard<std::mutex> lock(ctx->mu);
  const Status st = absorb(*ctx, call, a, Status::kLaunchFailure, "an event timing");
  if (!ok(st)) return st;
  *ns = static_cast<int64_t>(a.reply.a);
  return Status::kSuccess;
}

}  // namespace cuda
}  // namespace vgpu::executor
