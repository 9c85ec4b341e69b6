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
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "allocation_table.h"
#include "arena.h"
#include "common/context_tables.h"
#include "common/device_output.h"
#include "common/host_budget.h"
#include "common/tenant_ledger.h"
#include "vgpu/executor/backend.h"
#include "vgpu/fatbin/fatbin.h"
#include "worker_client.h"

namespace vgpu::executor::sim {

using common::kMaxAllocations;
using common::kMaxEvents;
using common::kMaxModules;
using common::kMaxStreams;
using common::StreamState;
using common::TenantLedger;

// Work pending on an event: accept() adds, execute()/discard() take.
struct EventState {
  uint32_t flags = 0;
  uint64_t pending = 0;      // queued RecordEvents
  bool recorded = false;     // a RecordEvent has executed
  uint64_t timestamp_ns = 0; // engine time of the last executed RecordEvent
  common::HandleState state = common::HandleState::kLive;
};

struct ModuleState {
  fatbin::Module image;                                // parsed, trusted
  std::map<std::string, uint64_t, std::less<>> variables;  // name -> device address
  std::map<std::string, Handle, std::less<>> functions;    // name -> function handle
  common::HandleState state = common::HandleState::kLive;
  common::HostCharge charge;  // its host memory, charged to the tenant while it lives
  // Its PTX text, for the worker's interpreter (null: none, or over the
  // tenant's host memory); shared with the worker's send.
  std::shared_ptr<const std::string> ptx;
};

struct FunctionState {
  Handle module = 0;
  std::string name;  // mangled
  uint32_t param_count = 0;
  uint32_t param_bytes = 0;
  uint32_t max_threads = 0;  // __launch_bounds__; 0: the device's limit
};

struct Context : common::ContextTables<EventState, ModuleState, FunctionState> {
  Context(ContextId id, TenantId tenant, std::unique_ptr<Arena> arena, uint64_t slot_base,
          uint64_t seed);

  // Constant after construction.
  const ContextId id;
  const TenantId tenant;
  const std::unique_ptr<Arena> arena;
  const uint64_t slot_base;

  std::mutex mu;
  // --- guarded by mu: the tables (ContextTables), and ---
  AllocationTable allocations;
  uint64_t charged = 0;  // bytes charged to the tenant for this context
  uint64_t symbols_version = 1;  // bumped when the set of variables changes
  uint64_t textures_version = 1;  // bumped when the set of texture objects changes
  // The device heap's size (cudaLimitMallocHeapSize), sent with each batch;
  // its charge above the default is in `charged`. Fixed once the worker
  // reports a kernel used the heap.
  uint64_t heap_bytes = kDefaultHeapBytes;
  bool heap_used = false;

  // Memory. alloc charges the tenant (cap, device) and backs the range;
  // kMemoryAllocation and nothing changed if it cannot.
  Status alloc(TenantLedger& ledger, uint64_t size, AllocKind kind, uint64_t* dptr,
               uint64_t align = kAllocAlignment);
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
  uint64_t worker_textures_version = 0;
  std::set<std::string, std::less<>> reported_missing;  // kernels already logged as missing
  std::set<Handle> worker_modules;  // modules whose PTX (if any) the worker has been sent

  // What kernels printed and the program has not taken (internally locked).
  common::DeviceOutput output;
};

}  // namespace vgpu::executor::sim
