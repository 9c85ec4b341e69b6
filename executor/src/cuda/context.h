// One context's state in the cuda backend (the daemon's side): its tables,
// which every call is checked against before anything reaches the worker, and
// the worker that holds its GPU context.
//
// Locking: `mu` guards everything below it. It is never held across a call
// to the worker; a call takes the worker pointer and the generation under mu,
// calls without it, and applies the answer under mu only if the generation is
// unchanged (a fault or reset in between replaced the worker: the answer is
// about a context that no longer exists). Order: mu, then the ledger's.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/allocation_map.h"
#include "common/context_tables.h"
#include "common/device_output.h"
#include "common/host_budget.h"
#include "common/tenant_ledger.h"
#include "vgpu/executor/backend.h"
#include "vgpu/fatbin/fatbin.h"
#include "worker_process.h"

namespace vgpu::executor::cuda {

using common::AllocKind;
using common::Allocation;
using common::TenantLedger;

using common::kMaxAllocations;
using common::kMaxEvents;
using common::kMaxModules;
using common::kMaxStreams;
using common::StreamState;

// Work pending on an event: accept() adds, execute()/discard() take.
struct EventState {
  uint32_t flags = 0;
  uint64_t pending = 0;   // queued RecordEvents
  bool recorded = false;  // a RecordEvent has executed
  common::HandleState state = common::HandleState::kLive;
};

struct ModuleState {
  fatbin::Module image;                                    // parsed here, trusted
  std::vector<uint8_t> bytes;                              // to load it again in a fresh worker
  std::map<std::string, uint64_t, std::less<>> variables;  // name -> device address
  std::map<std::string, Handle, std::less<>> functions;    // name -> function handle
  common::HandleState state = common::HandleState::kLive;
  common::HostCharge charge;  // its host memory (image included), charged to the tenant while it lives
};

struct FunctionState {
  Handle module = 0;
  std::string name;  // mangled
  uint32_t param_count = 0;
  uint32_t param_bytes = 0;
  bool have_attributes = false;
  FunctionAttributes attributes;
};

// The context's data area as the daemon maps it, and the file behind it,
// which each of the context's workers maps and registers (attach_data_area).
struct DataArea {
  std::span<uint8_t> bytes;  // the daemon's mapping (the transport keeps it)
  int fd = -1;               // owned: a copy of the area's file, for a fresh worker
  uint64_t offset = 0;       // where `bytes` start in it
  bool registered = false;   // the current worker has it registered
  ~DataArea() {
    if (fd >= 0) ::close(fd);
  }
  // [p, p + n) inside the area, registered: *at its offset in the area.
  bool holds(const uint8_t* p, uint64_t n, uint64_t* at) const {
    if (!registered || !p || p < bytes.data() || n > bytes.size()) return false;
    const uint64_t off = static_cast<uint64_t>(p - bytes.data());
    if (off > bytes.size() - n) return false;
    *at = off;
    return true;
  }
};

struct Context : common::ContextTables<EventState, ModuleState, FunctionState> {
  Context(ContextId id_, TenantId tenant_, uint64_t seed)
      : ContextTables(seed), id(id_), tenant(tenant_) {}

  // Constant after construction.
  const ContextId id;
  const TenantId tenant;

  // What the context's kernels printed and its program has not taken
  // (internally locked; CudaBackend::keep_output fills it after each item).
  common::DeviceOutput output;

  std::mutex mu;
  // --- guarded by mu: the tables (ContextTables), and ---
  std::shared_ptr<WorkerProcess> worker;  // null after a fault, until Reset
  uint64_t generation = 1;                // bumped whenever the worker is replaced or lost
  common::AllocationMap allocations;
  uint64_t charged = 0;  // bytes charged to the tenant for this context
  // The device heap's size in the worker's context (cudaLimitMallocHeapSize);
  // its charge above the default is in `charged`.
  uint64_t heap_bytes = kDefaultHeapBytes;
  DataArea area;

  // Records an allocation the worker made, whose charge (reserved_size(size))
  // the caller has already reserved from the ledger. False if it overlaps a
  // live one (the caller gives the charge back).
  bool record(uint64_t dptr, uint64_t size, AllocKind kind);
  // Forgets the allocation at dptr and gives its charge back.
  void forget(TenantLedger& ledger, uint64_t dptr);
  // What cudaDeviceReset leaves of a healthy context: no user allocations,
  // events or streams; modules and their variables stay.
  void forget_user_state(TenantLedger& ledger);
  // What a lost worker leaves: no allocations (variables included: their
  // addresses are stale, their names stay for the replay), events or streams.
  void forget_device_state(TenantLedger& ledger);
};

}  // namespace vgpu::executor::cuda
