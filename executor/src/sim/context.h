// One context's state in the sim backend: its memory (arena + allocation
// table), streams, events, modules and functions, its sticky fault, and its
// worker process.
//
// Locking: `mu` guards everything below it except the worker; `worker_mu`
// guards the worker and is taken only on the dispatcher thread (execute) and
// by destroy_context. Order: worker_mu, then mu, then the TenantLedger's.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <unordered_map>

#include "allocation_table.h"
#include "arena.h"
#include "common/tenant_ledger.h"
#include "vgpu/executor/backend.h"
#include "vgpu/fatbin/fatbin.h"
#include "worker_client.h"

namespace vgpu::executor::sim {

using common::TenantLedger;

// Per-context bounds on what a guest can make the daemon keep.
inline constexpr size_t kMaxStreams = 4096;
inline constexpr size_t kMaxEvents = 65536;
inline constexpr size_t kMaxModules = 1024;
inline constexpr size_t kMaxAllocations = 1 << 20;

// Work pending on a stream or event: accept() adds, execute()/discard() take.
struct StreamState {
  uint32_t flags = 0;
  int32_t priority = 0;
  uint64_t pending = 0;
  bool destroying = false;  // a DestroyStream is queued: no new work
};

struct EventState {
  uint32_t flags = 0;
  uint64_t pending = 0;      // queued RecordEvents
  bool recorded = false;     // a RecordEvent has executed
  uint64_t timestamp_ns = 0; // engine time of the last executed RecordEvent
  bool destroying = false;
};

struct ModuleState {
  fatbin::Module image;                                // parsed, trusted
  std::map<std::string, uint64_t, std::less<>> variables;  // name -> device address
  std::map<std::string, Handle, std::less<>> functions;    // name -> function handle
  bool unloading = false;  // an UnloadModule is queued
};

struct FunctionState {
  Handle module = 0;
  std::string name;  // mangled
  uint32_t param_count = 0;
  uint32_t param_bytes = 0;
};

struct Context {
  Context(ContextId id, TenantId tenant, std::unique_ptr<Arena> arena, uint64_t slot_base,
          uint64_t seed);

  // Constant after construction.
  const ContextId id;
  const TenantId tenant;
  const std::unique_ptr<Arena> arena;
  const uint64_t slot_base;

  std::mutex mu;
  // --- guarded by mu ---
  Status fault = Status::kSuccess;  // sticky: every call returns it until Reset
  AllocationTable allocations;
  uint64_t charged = 0;  // bytes charged to the tenant for this context
  StreamState default_stream;
  std::unordered_map<Handle, StreamState> streams;
  std::unordered_map<Handle, EventState> events;
  std::unordered_map<Handle, ModuleState> modules;
  std::unordered_map<Handle, FunctionState> functions;
  uint64_t symbols_version = 1;  // bumped when the set of variables changes
  std::mt19937_64 rng;

  // A fresh handle: random (so other contexts' handles are not guessable),
  // never 0, 1 or 2, unused by any table of this context.
  Handle new_handle();
  // The stream a work item or call names: 0, 1 (legacy) and 2 (per-thread)
  // are the default stream. nullptr if unknown.
  StreamState* stream(Handle h);
  void set_fault(Status s) {
    if (ok(fault)) fault = s;
  }

  // Memory. alloc charges the tenant (cap, device) and backs the range;
  // kMemoryAllocation and nothing changed if it cannot.
  Status alloc(TenantLedger& ledger, uint64_t size, AllocKind kind, uint64_t* dptr);
  // Frees the allocation starting at dptr (it must exist) and gives its pages back.
  void free(TenantLedger& ledger, uint64_t dptr);
  // Frees module variables of `module` and forgets the module and its functions.
  void unload(TenantLedger& ledger, Handle module);
  // Writes a variable's initial value (its bytes from the image, zeros after)
  // into the allocation at dptr.
  void initialise(uint64_t dptr, const fatbin::Variable& v);
  // Everything a worker needs to resolve variables by name.
  std::vector<WorkerSymbol> symbols() const;

  // --- guarded by worker_mu ---
  std::mutex worker_mu;
  std::unique_ptr<Worker> worker;
  LaunchPacket packet;        // the batch being sent, reused
  WorkerReply reply;          // its answer, reused
  std::vector<uint64_t> estimates;  // the backend's modeled time of each launch in `packet`
  uint64_t worker_symbols_version = 0;
  std::set<std::string, std::less<>> reported_missing;  // kernels already logged as missing
};

}  // namespace vgpu::executor::sim
