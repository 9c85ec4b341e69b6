// The cuda backend's class, shared by the files that implement it:
// cuda_backend.cpp (factory, contexts, memory, streams, events),
// cuda_modules.cpp (modules, functions, variables), cuda_work.cpp (queued
// work), cuda_recovery.cpp (lost workers, reset, replay into a fresh worker).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/context_registry.h"
#include "common/tenant_ledger.h"
#include "context.h"
#include "reaper.h"
#include "vgpu/executor/backend.h"
#include "vgpu/executor/cuda_backend.h"
#include "worker_pool.h"
#include "worker_process.h"

namespace vgpu::executor::cuda {

class CudaBackend final : public Backend {
 public:
  CudaBackend(const CudaConfig& config, const WorkerSpec& spec, DeviceInfo device);
  ~CudaBackend() override;

  std::string_view name() const override { return "cuda"; }
  bool immediate_calls_wait() const override { return true; }  // each asks its worker
  const DeviceInfo& device() const override { return device_; }

  Status create_context(TenantId tenant, ContextId* out) override;
  void destroy_context(ContextId ctx) override;
  Status attach_data_area(ContextId ctx, int fd, uint64_t offset, std::span<uint8_t> area) override;

  void set_memory_cap(TenantId tenant, uint64_t bytes) override;
  TenantMemory tenant_memory(TenantId tenant) const override;
  uint64_t context_bytes(ContextId ctx) const override;

  Status mem_alloc(ContextId ctx, uint64_t size, uint64_t* dptr) override;
  Status mem_info(ContextId ctx, uint64_t* free, uint64_t* total) override;
  Status take_device_output(ContextId ctx, int stream, std::span<uint8_t> dst, uint64_t* bytes,
                            uint64_t* dropped) override;
  Status texture_create(ContextId ctx, const TextureDesc& desc, Handle* out) override;
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

  Status accept(const Work& work) override;
  ExecResult execute(const Work& work) override;
  // Launches, memsets, copies on the device, copies to and from it of up
  // to wire::kMaxInlineCopyBytes, event records and waits, stream destruction.
  bool batches(const WorkOp& op) const override;
  size_t execute_batch(std::span<const Work* const> works, const BatchLimits& limits,
                       ExecResult* results) override;
  uint32_t max_batch_depth() const override;
  void issue_batch(BatchRun& run, const BatchLimits& limits, BatchRun* other) override;
  void finish_batch(BatchRun& run) override;
  void discard(const Work& work) override;
  BackendStats stats() const override;

 private:
  // What a call to the worker needs from the context, taken under ctx.mu.
  struct Call {
    std::shared_ptr<WorkerProcess> worker;
    uint64_t generation = 0;
  };

  std::shared_ptr<Context> find(ContextId id) const { return contexts_.find(id); }
  uint64_t call_deadline() const;
  uint64_t work_deadline() const;

  // With ctx.mu held: the context's fault, or its worker for a call.
  Status begin(Context& ctx, Call* call);
  // With ctx.mu held: applies a worker's answer. A call that outlived its
  // worker gets the context's fault; a timeout, a lost worker or a sticky
  // error ends the worker and faults the context (`timeout_status` for a
  // timeout). Returns the call's status.
  Status absorb(Context& ctx, const Call& call, const WorkerProcess::Answer& a,
                Status timeout_status, std::string_view what);
  // With ctx.mu held: ends the worker, forgets what it held, faults the context.
  void lose_worker(Context& ctx, Status status, const std::string& why);

  // A variable's address from the worker, charged and recorded (ctx.mu not held).
  Status fetch_variable(Context& ctx, const Call& call, Handle module, const std::string& name,
                        uint64_t expected_size, uint64_t* dptr);
  // Has `worker` map and register the context's data area (ctx.area, whose
  // fd is set); true if it did (ctx.mu not held: the fd stays until the
  // context goes, and only context creation and replay call this).
  bool register_area(Context& ctx, WorkerProcess& worker);
  // Loads a module image into a worker (ctx.mu not held).
  WorkerProcess::Answer load_image(WorkerProcess& w, Handle module,
                                   const std::vector<uint8_t>& bytes);

  // Work (cuda_work.cpp).
  ExecResult run(Context& ctx, const Work& work);
  // Moves what the worker printed for the item just run into ctx.output.
  void keep_output(Context& ctx, WorkerProcess& worker);
  // A copy of rows (checked by run()): one worker copy when its host side
  // is packed, else one a row.
  ExecResult run_rows(Context& ctx, const CopyRows& copy);
  ExecResult run_worker(Context& ctx, const wire::Request& request, std::span<const uint8_t> tail,
                        std::string_view what);
  // cudaLimitMallocHeapSize in the worker's context, charged (cuda_work.cpp).
  Status set_heap_size(Context& ctx, uint64_t bytes);
  void settle(Context& ctx, const Work& work, bool executed);
  // Batches (cuda_batch.cpp): one item checked and packed; the items at
  // the front of `works` packed for one request; what the tables say once
  // an item ran; a request sent and its reply applied; the items of a
  // context whose worker is gone.
  struct SentBatch;
  Status pack_item(Context& ctx, const Work& w, wire::BatchItem* b, std::span<const uint8_t>* bytes,
                   std::string* what);
  size_t pack_batch(Context& ctx, std::span<const Work* const> works, uint64_t out_bytes,
                    std::vector<uint8_t>* tail, std::string* first, Status* refused);
  uint64_t reply_bytes(const Work& w) const;
  void after_item(Context& ctx, const Work& work);
  bool send_batch(const BatchRun& run, const BatchLimits& limits, bool finish, SentBatch* out);
  void receive_batch(SentBatch& s, BatchRun& run);
  void fail_carried(BatchRun& run);
  // cudaDeviceReset (cuda_recovery.cpp): a healthy context resets in its
  // worker; a faulted one gets a fresh worker with its modules loaded again.
  Status reset(Context& ctx);
  Status replay(Context& ctx, std::shared_ptr<WorkerProcess> fresh);

  // Constant after construction.
  const CudaConfig config_;
  const DeviceInfo device_;

  Reaper reaper_;  // outlives every worker (declared before the pool and contexts)
  TenantLedger ledger_;  // internally locked
  // Shared with the charges modules keep; internally locked.
  const std::shared_ptr<common::HostBudget> host_budget_;
  WorkerPool pool_;      // internally locked
  std::atomic<bool> warned_no_param_info_{false};
  std::atomic<bool> warned_no_area_{false};
  // BackendStats: host bytes the daemon copied for the device, and bytes
  // that went straight from or to a registered data area.
  std::atomic<uint64_t> staged_bytes_{0}, direct_bytes_{0};
  common::ContextRegistry<Context> contexts_;  // internally locked
};

// The DeviceInfo vgpud reports for a probed device; `shared_memory` is what
// the backend shares out (the tenants' view of the device's memory).
DeviceInfo device_info_from(const wire::DeviceReport& report, uint64_t shared_memory);

}  // namespace vgpu::executor::cuda
