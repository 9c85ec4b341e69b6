// The dispatcher's private types, shared by the files that implement it:
// dispatcher.cpp (tenants, queues, turns) and dispatcher_flight.cpp (batches
// of launches, and those left on the device).
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <unordered_set>

#include "vgpu/scheduler/dispatcher.h"
#include "vgpu/thread_annotations.h"

namespace vgpu::scheduler {

// Usage, written by the dispatcher thread, read by anyone.
struct Dispatcher::Usage {
  std::atomic<uint64_t> gpu_ns{0}, commands{0}, kernels{0}, bytes_in{0}, bytes_out{0};
};

// What commands that ran add to a tenant's Usage, summed first so that a
// batch touches the shared counters once.
struct Dispatcher::Tally {
  uint64_t gpu_ns = 0, commands = 0, kernels = 0, bytes_in = 0, bytes_out = 0;
  void add(const executor::Work& w, const executor::ExecResult& r);
  void into(Usage& u) const {
    u.gpu_ns += gpu_ns;
    u.commands += commands;
    u.kernels += kernels;
    if (bytes_in) u.bytes_in += bytes_in;
    if (bytes_out) u.bytes_out += bytes_out;
  }
};

struct Dispatcher::Tenant : std::enable_shared_from_this<Tenant> {
  TenantId id = 0;
  // As added/updated, before any pin. Guarded by the dispatcher's mu_, which
  // GUARDED_BY cannot name from here (it would mean a mu_ of the Tenant).
  TenantParams params;
  // Submitted commands, in order. The transport thread appends a whole burst
  // under one lock; the dispatcher takes everything at once (swaps it into
  // `taken`), so the two threads meet once per burst, not once per command.
  Mutex inbox_mu;
  std::deque<Command> inbox GUARDED_BY(inbox_mu);
  std::atomic<size_t> queued{0};  // in `inbox` and `taken`
  std::atomic<size_t> in_flight{0};  // taken, and left on the device (flight_)
  std::atomic<bool> told_full{false};
  std::shared_ptr<Usage> usage;
  // What may no longer run, marked by purge_context and remove_tenant on the
  // caller's thread, read by the dispatcher before each command it runs: a
  // dead context's commands (or a removed tenant's) are dropped when popped.
  std::atomic<bool> removed{false};
  Mutex dead_mu;
  std::unordered_set<executor::ContextId> dead_contexts GUARDED_BY(dead_mu);
  std::atomic<size_t> dead_count{0};  // dead_contexts.size(), read without the lock
  // Dispatcher thread only: commands taken from `inbox` and not yet run
  // (including the rest of a batch put back), ahead of everything in `inbox`.
  std::deque<Command> taken;
};

}  // namespace vgpu::scheduler
