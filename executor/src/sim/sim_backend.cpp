// The sim backend: factory, contexts, memory, streams and events.
#include "vgpu/executor/sim_backend.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <new>

#include <spdlog/spdlog.h>

#include "common/backend_stats.h"
#include "common/heap_charge.h"
#include "common/worker_path.h"
#include "device_model.h"
#include "sim_backend_impl.h"

namespace vgpu::executor {

uint64_t sim_slot_bytes(const SimConfig& config) {
  return (config.device_memory + kGiB - 1) / kGiB * kGiB;
}

namespace {

constexpr std::chrono::milliseconds kWorkerStartLimit{20000};
constexpr int32_t kLeastPriority = 0, kGreatestPriority = -5;  // as an H100 reports them
// More interpreter threads than this gain little: a grid's CTAs are taken in
// order from one counter, and a worker's memory grows with each thread's CTA.
constexpr unsigned kMaxInterpreterThreads = 64;

unsigned interpreter_threads(const SimConfig& config) {
  unsigned n = config.interpreter_threads;
  if (n == 0) {
    cpu_set_t cpus;
    n = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? static_cast<unsigned>(CPU_COUNT(&cpus)) : 1;
  }
  return std::clamp(n, 1u, kMaxInterpreterThreads);
}

}  // namespace

Status make_sim_backend(const SimConfig& config, std::unique_ptr<Backend>* out) {
  if (!out) return Status::kInvalidValue;
  try {
    if (config.device_memory == 0 || config.device_memory > kSimSlotRegionEnd - kSimSlotRegionBase ||
        !std::isfinite(config.ns_per_thread) || config.ns_per_thread < 0 ||
        config.watchdog.count() <= 0) {
      spdlog::error("sim: invalid configuration (device memory {}, ns per thread {}, watchdog {} ms)",
                    config.device_memory, config.ns_per_thread, config.watchdog.count());
      return Status::kInvalidValue;
    }
    sim::WorkerSpec spec{config.worker_path.empty() ? default_worker_path("vgpu-sim-worker") : config.worker_path,
                         config.plugin_paths, interpreter_threads(config)};
    if (access(spec.path.c_str(), X_OK) != 0) {
      spdlog::error("sim: worker executable {} not found or not executable", spec.path);
      return Status::kInitializationError;
    }
    // Load every plug-in once in a throwaway worker: a bad path or a missing
    // dependency shows now, with its reason, instead of at some tenant's launch.
    std::unique_ptr<sim::Worker> check;
    std::string error;
    if (!ok(sim::Worker::start(spec, -1, 0, 0, kWorkerStartLimit, &check, &error))) {
      spdlog::error("sim: {}", error);
      return Status::kInitializationError;
    }
    check.reset();
    const std::string worker = spec.path;
    auto backend = std::make_unique<sim::SimBackend>(config, std::move(spec));
    spdlog::info("sim: device '{}', {} MiB, {} plug-in(s), watchdog {} ms, worker {}",
                 backend->device().name, config.device_memory >> 20, config.plugin_paths.size(),
                 config.watchdog.count(), worker);
    *out = std::move(backend);
    return Status::kSuccess;
  } catch (const std::bad_alloc&) {
    return Status::kMemoryAllocation;
  }
}

namespace sim {

SimBackend::SimBackend(const SimConfig& config, WorkerSpec worker)
    : config_(config),
      worker_spec_(std::move(worker)),
      device_(make_device_info(config)),
      slot_bytes_(sim_slot_bytes(config)),
      ledger_(config.device_memory),
      host_budget_(common::HostBudget::create(config.tenant_host_limit)),
      slots_(kSimSlotRegionBase, kSimSlotRegionEnd, slot_bytes_, kSimSlotGuard) {}

SimBackend::~SimBackend() {
  // Contexts left behind: end their workers (their memory goes with them).
  for (const auto& ctx : contexts_.take_all()) {
    std::lock_guard<std::mutex> wl(ctx->worker_mu);
    ctx->worker.reset();
  }
}

// --- contexts ------------------------------------------------------------------

Status SimBackend::create_context(TenantId tenant, ContextId* out) {
  if (!out) return Status::kInvalidValue;
  uint64_t base = 0;
  if (!slots_.acquire(&base)) {
    spdlog::warn("sim: no device address slot left for a new context of tenant {}", tenant);
    return Status::kMemoryAllocation;
  }
  const ContextId id = contexts_.next_id();
  std::unique_ptr<Arena> arena;
  const Status st = Arena::create(slot_bytes_, "vgpu-sim-ctx-" + std::to_string(id), &arena);
  if (!ok(st)) {
    slots_.release(base);
    return st;
  }
  contexts_.add(id, std::make_shared<Context>(id, tenant, std::move(arena), base, contexts_.seed()));
  *out = id;
  return Status::kSuccess;
}

void SimBackend::destroy_context(ContextId id) {
  const std::shared_ptr<Context> ctx = contexts_.take(id);
  if (!ctx) return;
  {
    std::lock_guard<std::mutex> wl(ctx->worker_mu);
    ctx->worker.reset();  // killed and reaped
  }
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    ledger_.release(ctx->tenant, ctx->charged);
    ctx->charged = 0;
    ctx->arena->set_length(0);  // the pages go now, the mapping with the last reference
  }
  slots_.release(ctx->slot_base);
}

// --- tenant limits -------------------------------------------------------------

void SimBackend::set_memory_cap(TenantId tenant, uint64_t bytes) { ledger_.set_cap(tenant, bytes); }

TenantMemory SimBackend::tenant_memory(TenantId tenant) const { return ledger_.get(tenant); }

uint64_t SimBackend::context_bytes(ContextId id) const {
  auto ctx = find(id);
  if (!ctx) return 0;
  std::lock_guard<std::mutex> lock(ctx->mu);
  return ctx->allocations.reserved_bytes() + common::heap_charge(ctx->heap_bytes);  // the heap is its memory too
}

BackendStats SimBackend::stats() const { return common::collect_stats(contexts_.all(), ledger_); }

// --- memory --------------------------------------------------------------------

Status SimBackend::mem_alloc(ContextId id, uint64_t size, uint64_t* dptr) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!dptr) return Status::kInvalidValue;
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (!ok(ctx->fault)) return ctx->fault;
  if (size == 0) {  // cudaMalloc(&p, 0): success, NULL
    *dptr = 0;
    return Status::kSuccess;
  }
  return ctx->alloc(ledger_, size, AllocKind::kUser, dptr);
}

Status SimBackend::mem_info(ContextId id, uint64_t* free, uint64_t* total) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!free || !total) return Status::kInvalidValue;
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (!ok(ctx->fault)) return ctx->fault;
  // The tenant's view: its cap is its device; other tenants are invisible.
  const uint64_t visible = ledger_.visible_total(ctx->tenant);
  const uint64_t used = ledger_.get(ctx->tenant).used;
  *total = visible;
  *free = visible > used ? visible - used : 0;
  return Status::kSuccess;
}

Status SimBackend::take_device_output(ContextId id, int stream, std::span<uint8_t> dst,
                                      uint64_t* bytes, uint64_t* dropped) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (stream != 1 && stream != 2) return Status::kInvalidValue;
  ctx->output.take(stream, dst, bytes, dropped);
  return Status::kSuccess;
}

// --- streams and events --------------------------------------------------------

Status SimBackend::stream_create(ContextId id, uint32_t flags, int32_t priority, Handle* out) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!out || (flags & ~common::kStreamNonBlocking) != 0) return Status::kInvalidValue;
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (!ok(ctx->fault)) return ctx->fault;
  if (ctx->streams.size() >= kMaxStreams) return Status::kMemoryAllocation;
  StreamState s;
  s.flags = flags;
  s.priority = std::clamp(priority, kGreatestPriority, kLeastPriority);  // CUDA clamps too
  const Handle h = ctx->new_handle();
  ctx->streams.emplace(h, s);
  *out = h;
  return Status::kSuccess;
}

Status SimBackend::stream_query(ContextId id, Handle stream) {
  auto ctx = find(id);
  return ctx ? common::query_stream(*ctx, stream) : Status::kInvalidResourceHandle;
}

Status SimBackend::event_create(ContextId id, uint32_t flags, Handle* out) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!out || !common::valid_event_flags(flags)) return Status::kInvalidValue;
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (!ok(ctx->fault)) return ctx->fault;
  if (ctx->events.size() >= kMaxEvents) return Status::kMemoryAllocation;
  EventState e;
  e.flags = flags;
  const Handle h = ctx->new_handle();
  ctx->events.emplace(h, e);
  *out = h;
  return Status::kSuccess;
}

Status SimBackend::event_query(ContextId id, Handle event) {
  auto ctx = find(id);
  return ctx ? common::query_event(*ctx, event) : Status::kInvalidResourceHandle;
}

Status SimBackend::event_elapsed(ContextId id, Handle start, Handle end, int64_t* ns) {
  auto ctx = find(id);
  if (!ctx) return Status::kInvalidResourceHandle;
  if (!ns) return Status::kInvalidValue;
  std::lock_guard<std::mutex> lock(ctx->mu);
  if (!ok(ctx->fault)) return ctx->fault;
  auto a = ctx->events.find(start);
  auto b = ctx->events.find(end);
  if (a == ctx->events.end() || b == ctx->events.end()) return Status::kInvalidResourceHandle;
  const EventState& s = a->second;
  const EventState& e = b->second;
  if ((s.flags | e.flags) & common::kEventDisableTiming) return Status::kInvalidResourceHandle;
  if (s.pending > 0 || e.pending > 0) return Status::kNotReady;
  if (!s.recorded || !e.recorded) return Status::kInvalidResourceHandle;
  *ns = static_cast<int64_t>(e.timestamp_ns - s.timestamp_ns);
  return Status::kSuccess;
}

}  // namespace sim
}  // namespace vgpu::executor
