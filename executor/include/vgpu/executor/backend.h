// The executor's contract: a Backend runs one tenant-process's CUDA work on a
// device (the real GPU through the driver API, or the CPU `sim` model).
//
// Ownership and threads:
//  - A context is one guest process's device state: its memory, streams,
//    events, modules. A tenant (a VM) may own several contexts; memory caps
//    are per tenant, across its contexts.
//  - Immediate calls (alloc, create, query) may come from any thread.
//  - Work (copies, kernels, syncs) goes through a queue the scheduler owns:
//    accept() when it is queued, then exactly one of execute() (on the single
//    dispatcher thread, one at a time) or discard() (dropped unexecuted).
//  - Every handle and device pointer is checked against the calling context's
//    own tables; anything else is an error and touches nothing.
//  - No exceptions cross this interface: Status values only.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "vgpu/executor/texture.h"
#include "vgpu/protocol/status.h"

namespace vgpu::executor {

using TenantId = uint32_t;
using ContextId = uint64_t;
using Handle = uint64_t;  // stream, event, module or function, per context

inline constexpr Handle kDefaultStream = 0;
inline constexpr int kDeviceAttributeCount = 160;  // indexed by cudaDeviceAttr
// Decompressed image bytes one module may hold unless configured otherwise
// (SimConfig, CudaConfig): a class's modules are a few MiB; a CUDA library's
// largest fat binaries tens of MiB.
inline constexpr uint64_t kDefaultModuleImageLimit = 256ull << 20;
// Host memory the modules of one tenant (all its contexts) may hold unless
// configured otherwise: their parsed metadata, and on the cuda backend the
// images kept to load them again into a fresh worker.
inline constexpr uint64_t kDefaultTenantHostLimit = 1024ull << 20;

struct DeviceInfo {
  std::string name;
  std::array<uint8_t, 16> uuid{};
  uint64_t total_memory = 0;
  int32_t driver_version = 0;  // as cudaDriverGetVersion reports it
  std::array<int32_t, kDeviceAttributeCount> attributes{};
};

struct FunctionInfo {
  uint32_t param_count = 0;
  uint32_t param_bytes = 0;  // exact size a launch's parameter buffer must have
};

struct FunctionAttributes {
  uint64_t shared_size_bytes = 0, const_size_bytes = 0, local_size_bytes = 0;
  int32_t max_threads_per_block = 0, num_regs = 0, ptx_version = 0, binary_version = 0;
};

// --- queued work ---------------------------------------------------------------
// Host-side bytes (src/dst of copies) point into the caller's data area, which
// the caller keeps mapped until the work is executed or discarded.
struct CopyHtoD { uint64_t dst; const uint8_t* src; uint64_t size; };
struct CopyDtoH { uint64_t src; uint8_t* dst; uint64_t size; };
struct CopyDtoD { uint64_t dst; uint64_t src; uint64_t size; };
// `height` rows of `width` bytes, each side's rows its pitch apart (a 2D
// copy). `kind` is a proto::RowsKind; a host side's rows start at `host` (in
// the data area) and its address field is unused. The front checked the shape
// (proto::rows_span).
struct CopyRows {
  uint32_t kind;
  uint64_t dst, dst_pitch, src, src_pitch, width, height;
  uint8_t* host;
};
struct Memset { uint64_t dst; uint64_t size; uint8_t value; };
struct Launch {
  Handle function;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem;
  std::vector<uint8_t> params;  // host-private copy, param_bytes long
  bool cooperative = false;     // all blocks resident at once (grid-wide sync)
  // Thread block cluster shape; {1, 1, 1}: none. Each grid dimension is a
  // multiple of it, at most 16 blocks in all (the front checked).
  uint32_t cluster[3] = {1, 1, 1};
};
struct RecordEvent { Handle event; };
struct WaitEvent { Handle event; };
struct Free { uint64_t dptr; };
struct DestroyStream { Handle stream; };
struct DestroyEvent { Handle event; };
struct DestroyTexture { Handle texture; };  // a texture or surface object
struct UnloadModule { Handle module; };
struct Synchronize {};  // completes once everything queued before it has
struct Reset {};        // Synchronize, then free all memory, streams, events
// cudaLimitMallocHeapSize: the device heap's size from here on (the front
// checked it is not 0). The default heap (kDefaultHeapBytes) costs the tenant
// nothing; a larger one is charged as device memory (kMemoryAllocation, and
// nothing changed, past its room). Once a kernel of the context has used
// the heap, only its current size is accepted (kInvalidValue), as in CUDA.
// A reset keeps it; a context whose worker was lost gets the default back.
struct SetHeapSize { uint64_t bytes; };
inline constexpr uint64_t kDefaultHeapBytes = 8ull << 20;

using WorkOp = std::variant<CopyHtoD, CopyDtoH, CopyDtoD, CopyRows, Memset, Launch, RecordEvent, WaitEvent,
                            Free, DestroyStream, DestroyEvent, DestroyTexture, UnloadModule,
                            Synchronize, Reset, SetHeapSize>;

struct Work {
  ContextId context = 0;
  Handle stream = kDefaultStream;
  WorkOp op;
};

// How far one execute_batch or issue_batch call may go.
struct BatchLimits {
  uint64_t budget_ns = UINT64_MAX;  // device time after which no more items are issued
  uint32_t depth = 1;               // items on the device at once, at most
  // issue_batch may return with items still on the device (BatchRun): when
  // it stops issuing before the end of its works (the budget), or, when
  // `work_follows` says more will be issued right after, at any time.
  bool may_leave_in_flight = false;
  bool work_follows = false;
};

struct ExecResult {
  Status status = Status::kSuccess;
  uint64_t gpu_ns = 0;  // device time this work took, as measured by the backend
};

// One issue_batch or finish_batch call: items of one context, in queue order.
struct BatchRun {
  std::span<const Work* const> works;
  // works[0, carried) are items the last issue_batch of this context left on
  // the device, handed back first, in the same order.
  size_t carried = 0;
  ExecResult* results = nullptr;  // one per work
  // Filled by the call: results[0, finished) are known; works[finished,
  // finished + in_flight) are still on the device; the rest did not run and
  // stay accepted.
  size_t finished = 0;
  size_t in_flight = 0;
};

// Per-tenant usage the backend observes (the ledger and quotas read it).
struct TenantMemory {
  uint64_t used = 0;
  uint64_t peak = 0;
  uint64_t cap = 0;  // 0: no cap beyond the device
};

// What one tenant holds on the device now: the daemon's own accounting
// (`vgpuctl status`), and how tests check that a VM that went away left
// nothing behind.
struct TenantHoldings {
  TenantId tenant = 0;
  uint64_t contexts = 0;
  uint64_t allocations = 0;  // live allocations, module variables included
  uint64_t bytes = 0;        // device memory charged to the tenant
  uint64_t streams = 0;      // created and not destroyed (default streams not counted)
  uint64_t events = 0;
  uint64_t modules = 0;
  uint64_t pending = 0;      // accepted work not yet executed or discarded
};

struct BackendStats {
  uint64_t contexts = 0;
  uint64_t device_bytes = 0;  // device memory charged to all tenants
  // Bytes copied between host and device through a copy of the backend's
  // own (a staging area, a message to its device), and straight from or to
  // a data area it registered (attach_data_area).
  uint64_t staged_copy_bytes = 0;
  uint64_t direct_copy_bytes = 0;
  std::vector<TenantHoldings> tenants;  // every tenant holding anything, by id
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  virtual const DeviceInfo& device() const = 0;
  // The device the context is on (what its process is told about "its GPU":
  // name, UUID, attributes); a backend of one device answers device().
  virtual const DeviceInfo& device_of(ContextId) const { return device(); }

  // True when an immediate call may wait on another process (a worker that
  // talks to the driver): the host then answers those calls, and creates
  // contexts, off the thread that reads every VM's requests.
  virtual bool immediate_calls_wait() const { return false; }

  // --- contexts ---
  virtual Status create_context(TenantId tenant, ContextId* out) = 0;
  // Releases everything the context holds. Its queued work must have been
  // executed or discarded first.
  virtual void destroy_context(ContextId ctx) = 0;
  // The context's data area (where its program's copies are staged): `area`
  // in this process, which is also `fd` from `offset` on. A backend may map
  // it too, so that copies between the area and the device need no staging
  // of their own (the cuda worker registers it with the driver). The caller
  // keeps its fd. kNotSupported where a backend has no use for it; copies
  // work either way. Called once, before the context's first work.
  virtual Status attach_data_area(ContextId ctx, int fd, uint64_t offset, std::span<uint8_t> area) {
    (void)ctx;
    (void)fd;
    (void)offset;
    (void)area;
    return Status::kNotSupported;
  }

  // --- tenant limits ---
  virtual void set_memory_cap(TenantId tenant, uint64_t bytes) = 0;  // 0: none
  virtual TenantMemory tenant_memory(TenantId tenant) const = 0;
  // Device memory the context's live allocations, and its device heap above
  // CUDA's default, are charged (one guest process's: vgpu-smi's process
  // list); 0 for a context that is gone.
  virtual uint64_t context_bytes(ContextId ctx) const = 0;

  // --- immediate calls ---
  virtual Status mem_alloc(ContextId ctx, uint64_t size, uint64_t* dptr) = 0;
  virtual Status mem_info(ContextId ctx, uint64_t* free, uint64_t* total) = 0;
  virtual Status stream_create(ContextId ctx, uint32_t flags, int32_t priority, Handle* out) = 0;
  virtual Status stream_query(ContextId ctx, Handle stream) = 0;  // kNotReady while work pends
  virtual Status event_create(ContextId ctx, uint32_t flags, Handle* out) = 0;
  virtual Status event_query(ContextId ctx, Handle event) = 0;  // kNotReady while pending
  virtual Status event_elapsed(ContextId ctx, Handle start, Handle end, int64_t* ns) = 0;
  virtual Status module_load(ContextId ctx, std::span<const uint8_t> fatbin, Handle* out) = 0;
  virtual Status function_get(ContextId ctx, Handle module, std::string_view name, Handle* out,
                              FunctionInfo* info) = 0;
  virtual Status var_get(ContextId ctx, Handle module, std::string_view name, uint64_t size,
                         uint64_t* dptr) = 0;
  virtual Status func_attributes(ContextId ctx, Handle function, FunctionAttributes* out) = 0;
  // A texture or surface object (texture.h) that the context's kernels
  // read through its handle: kInvalidValue, and nothing made, if the
  // description is not one texture_check() allows or the memory it spans is
  // not inside one of the context's allocations; kNotSupported where the
  // backend does not implement texture objects.
  virtual Status texture_create(ContextId ctx, const TextureDesc& desc, Handle* out) = 0;
  // What the context's kernels printed (stream 1: device printf) or
  // reported (2: failed asserts) and the program has not taken: up to
  // dst.size() bytes, oldest first, into dst; *dropped is what was lost to
  // the backend's bound since the last take.
  virtual Status take_device_output(ContextId ctx, int stream, std::span<uint8_t> dst, uint64_t* bytes,
                                    uint64_t* dropped) = 0;

  // --- queued work ---
  // Checks what can be checked when the work is queued (handles exist, the
  // parameter buffer has the kernel's size) and marks streams and events
  // pending. An error here means the work is not queued.
  virtual Status accept(const Work& work) = 0;
  // Runs accepted work to completion and measures its device time. Called on
  // the dispatcher thread only, one at a time.
  virtual ExecResult execute(const Work& work) = 0;
  // Drops accepted work without running it (its context is going away).
  virtual void discard(const Work& work) = 0;
  // Whether execute_batch takes this kind of work (besides launches, which
  // every backend takes): the dispatcher hands consecutive items it takes
  // to execute_batch together.
  virtual bool batches(const WorkOp& op) const { return std::holds_alternative<Launch>(op); }
  // Runs `works` (accepted, of one context, in queue order) as that many
  // execute() calls would, filling results[i] for each item that ran, and
  // returns how many ran: at least one. The dispatcher hands consecutive
  // items batches() takes here, so a backend can issue them in one round trip to
  // its device (the sim backend's worker) and keep several of them on the
  // GPU at once (the cuda backend's). It stops issuing once the items that
  // finished have used `limits.budget_ns` of device time; with up to
  // `limits.depth` items on the device at once, at most depth - 1 items
  // after the one that reached the budget may still run. The rest stay
  // accepted.
  virtual size_t execute_batch(std::span<const Work* const> works, const BatchLimits& limits,
                               ExecResult* results) {
    size_t n = 0;
    uint64_t used = 0;
    while (n < works.size() && (n == 0 || used < limits.budget_ns)) {
      results[n] = execute(*works[n]);
      used += results[n++].gpu_ns;
    }
    return n;
  }
  // The most items execute_batch keeps on the device at once (1: it runs
  // them one after the other).
  virtual uint32_t max_batch_depth() const { return 1; }
  // execute_batch that need not wait for its last items, so the device goes
  // on to the next batch (of this context or another) without idling for
  // the round trip. With limits.may_leave_in_flight it may return with up to
  // limits.depth items still on the device (run.in_flight); their results
  // come from the next issue_batch of the same context, which is handed them
  // first (run.carried), or from finish_batch. Nothing else of that context
  // may run, be discarded or be destroyed until then. `other`, if set, is
  // what another context left in flight: it is finished (as finish_batch)
  // once this batch is on its way, before this batch is waited for, so a
  // hang of `other` is found as its own. At least one item finishes or stays
  // in flight. Backends that never leave items behind need not override it.
  virtual void issue_batch(BatchRun& run, const BatchLimits& limits, BatchRun* other) {
    if (other) finish_batch(*other);
    run.finished = execute_batch(run.works, limits, run.results);
    run.in_flight = 0;
  }
  // Waits for what issue_batch left in flight (run.works, all carried) and
  // fills their results.
  virtual void finish_batch(BatchRun& run) {
    run.finished = 0;
    run.in_flight = 0;
  }

  // --- accounting (any thread; a snapshot for an admin's poll, not a hot path) ---
  virtual BackendStats stats() const { return {}; }
};

}  // namespace vgpu::executor
