// The sim backend's class, shared by the files that implement it:
// sim_backend.cpp (factory, contexts, memory, streams, events),
// sim_modules.cpp (modules, functions, variables), sim_textures.cpp
// (texture and surface objects), sim_work.cpp (queued work)
// and sim_launch.cpp (kernels in the worker, the watchdog, modeled time).
#pragma once

#include <memory>

#include "common/context_registry.h"
#include "common/tenant_ledger.h"
#include "context.h"
#include "slot_pool.h"
#include "vgpu/executor/backend.h"
#include "vgpu/executor/sim_backend.h"
#include "worker_client.h"

namespace vgpu::executor::sim {

class SimBackend final : public Backend {
 public:
  SimBackend(const SimConfig& config, WorkerSpec worker);
  ~SimBackend() override;

  std::string_view name() const override { return "sim"; }
  const DeviceInfo& device() const override { return device_; }

  Status create_context(TenantId tenant, ContextId* out) override;
  void destroy_context(ContextId ctx) override;

  void set_memory_cap(TenantId tenant, uint64_t bytes) override;
  TenantMemory tenant_memory(TenantId tenant) const override;
  uint64_t context_bytes(ContextId ctx) const override;

  Status mem_alloc(ContextId ctx, uint64_t size, uint64_t* dptr) override;
  Status mem_info(ContextId ctx, uint64_t* free, uint64_t* total) override;
  Status take_device_output(ContextId ctx, int stream, std::span<uint8_t> dst, uint64_t* bytes,
                            uint64_t* dropped) override;
  Status stream_create(ContextId ctx, uint32_t flags, int32_t priority, Handle* out) override;
  Status stream_query(ContextId ctx, Handle stream) override;
  Status event_create(ContextId ctx, uint32_t flags, Handle* out) override;
  Status event_query(ContextId ctx, Handle event) override;
  Status event_elapsed(ContextId ctx, Handle start, Handle end, int64_t* ns) override;
  Status module_load(ContextId ctx, std::span<const uint8_t> fatbin, Handle* out) override;
  Status function_get(ContextId ctx, Handle module, std::string_view name, Handle* out,
                      FunctionInfo* info) override;
  Status var_get(ContextId ctx, Handle module, std::string_view name, uint64_t size,
                 uint64_t* dptr) override;
  Status func_attributes(ContextId ctx, Handle function, FunctionAttributes* out) override;
  Status texture_create(ContextId ctx, const TextureDesc& desc, Handle* out) override;

  Status accept(const Work& work) override;
  ExecResult execute(const Work& work) override;
  size_t execute_batch(std::span<const Work* const> works, const BatchLimits& limits,
                       ExecResult* results) override;
  void discard(const Work& work) override;
  BackendStats stats() const override;

 private:
  std::shared_ptr<Context> find(ContextId id) const { return contexts_.find(id); }
  // Runs one work item other than a launch (sim_work.cpp), with ctx.mu held
  // by the caller only where the item needs it.
  Status run(Context& ctx, const WorkOp& op);
  // Runs consecutive launches in the context's worker, as one batch, within
  // `budget_ns` of modeled time (sim_launch.cpp); returns how many ran.
  size_t run_launches(Context& ctx, std::span<const Work* const> works, uint64_t budget_ns,
                      ExecResult* results);
  // Reset: frees memory, streams and events, re-initialises variables,
  // clears the fault and ends the worker.
  void reset(Context& ctx);
  // Undoes accept()'s bookkeeping once work is executed or discarded
  // (settle_locked: ctx.mu held).
  void settle(Context& ctx, const Work& work, bool executed);
  void settle_locked(Context& ctx, const Work& work, bool executed);

  // Constant after construction.
  const SimConfig config_;
  const WorkerSpec worker_spec_;
  const DeviceInfo device_;
  const uint64_t slot_bytes_;

  TenantLedger ledger_;  // internally locked
  // Shared with the charges modules keep; internally locked.
  const std::shared_ptr<common::HostBudget> host_budget_;
  SlotPool slots_;       // internally locked
  common::ContextRegistry<Context> contexts_;  // internally locked
};

}  // namespace vgpu::executor::sim
