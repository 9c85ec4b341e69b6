// One context on the GPU, driven through a DriverApi: what the worker process
// (vgpu-cuda-worker) runs for its context. Handles (modules, functions,
// events) are the daemon's values, used here as keys; device pointers are the
// driver's. The daemon has already checked every handle and range against the
// context's tables; the engine checks again that it knows what it is asked to
// use, and otherwise only talks to the driver.
//
// Work runs to completion: each call that issues GPU work records an event
// before and after it on the engine's own stream, waits for the second, and
// reports the time between them (gpu_ns) and the first error. A batch
// (run_items) is what keeps the GPU busy: several items in flight at once,
// each on its guest stream's own driver stream (the guest's default stream
// is the driver's legacy stream, so CUDA's rules between streams hold as
// they would natively), each timed between the events around it on that
// stream. Work outside batches runs only once nothing of the context is in
// flight, so which stream carries it does not matter (docs/cuda-backend.md).
//
// Threads: the worker calls the control half (alloc, module, function,
// variable, event creation and timing) and the work half from two threads, so
// an allocation is not stuck behind a long kernel. Both bind the context first
// (bind_thread); the tables are guarded by one mutex, never held across a call
// that waits for the GPU.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "driver_api.h"
#include "staging_area.h"
#include "worker_protocol.h"

namespace vgpu::executor::cuda {

struct ParamSlot {
  uint32_t offset = 0;
  uint32_t size = 0;
};

struct KernelAttributes {
  int32_t shared_size_bytes = 0, const_size_bytes = 0, local_size_bytes = 0;
  int32_t max_threads_per_block = 0, num_regs = 0, ptx_version = 0, binary_version = 0;
};

struct Timed {
  CUresult result = CUDA_SUCCESS;
  uint64_t gpu_ns = 0;
};

struct LaunchSpec {
  uint64_t function = 0;
  uint32_t grid[3] = {};
  uint32_t block[3] = {};
  uint32_t shared_mem = 0;
  bool cooperative = false;
  std::span<const uint8_t> params;  // packed as the kernel expects
  uint32_t cluster[3] = {1, 1, 1};  // thread block cluster shape; {1, 1, 1}: none
};

// A guest stream as a batch names it (wire::BatchItem): 0, 1 and 2 are the
// guest's default streams.
struct GuestStream {
  uint64_t handle = 0;
  uint32_t flags = 0;  // wire::kStreamNonBlocking
  int32_t priority = 0;
};

// One item of a batch; wire::ItemKind says which fields count.
struct ItemSpec {
  wire::ItemKind kind = wire::ItemKind::kNothing;
  GuestStream stream;
  LaunchSpec launch;              // kLaunch
  uint64_t a = 0, b = 0, c = 0;   // as wire::BatchItem
  std::span<const uint8_t> data;  // kCopyIn
};

// Items one batch keeps on the GPU at once, at most.
inline constexpr uint32_t kMaxItemsInFlight = 16;

class Engine {
 public:
  explicit Engine(const DriverApi& api) : api_(api) {}
  ~Engine();  // gives back everything it holds (in the worker, exit does too)
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // cuInit, the device's primary context with `ctx_flags` (CU_CTX_SCHED_*),
  // bound to this thread, its stream and timing events. *why on failure.
  CUresult init(int device_ordinal, unsigned ctx_flags, std::string* why);
  CUresult bind_thread() const;
  // Copies go through `staging`; with `pin` its slots are page-locked now
  // (cuMemHostRegister). A failed pin is reported and copies still work,
  // from pageable memory.
  CUresult attach_staging(StagingArea* staging, bool pin);
  bool staging_pinned() const { return staging_pinned_; }
  // The context's data area, mapped by the worker at `area` (`bytes` long):
  // registered with the driver (cuMemHostRegister), so that copies between
  // it and the device (copy_area) are one DMA. Once; the mapping stays the
  // caller's and outlives the engine.
  CUresult attach_area(uint8_t* area, uint64_t bytes);

  // --- control ---
  CUresult alloc(uint64_t size, uint64_t* dptr);
  CUresult module_load(uint64_t module, const void* image);
  // Looks the kernel up; *layout is what cuFuncGetParamInfo says (nothing
  // when the driver lacks it: *layout_known false).
  CUresult function_get(uint64_t module, uint64_t function, const std::string& name,
                        std::vector<ParamSlot>* layout, bool* layout_known);
  // The variable's address and size. The first lookup also keeps its current
  // bytes, which reset() puts back (a module is asked for its variables right
  // after it loads, so these are the initial values).
  CUresult var_get(uint64_t module, const std::string& name, uint64_t* dptr, uint64_t* bytes);
  CUresult func_attributes(uint64_t function, KernelAttributes* out);
  CUresult event_create(uint64_t event, unsigned flags);
  CUresult event_elapsed(uint64_t start, uint64_t end, float* ms);

  // --- work (one at a time) ---
  // Staged copies; `stop` ends waits for the daemon early (it went away).
  // `rows` (width not 0): the `size` bytes are rows, packed in the staging
  // area, their device side's pitch apart (wire::RowShape).
  Timed copy_in(uint64_t dst, uint64_t size, const wire::RowShape& rows, uint64_t deadline_ns,
                const std::function<bool()>& stop);
  Timed copy_out(uint64_t src, uint64_t size, const wire::RowShape& rows, uint64_t deadline_ns,
                 const std::function<bool()>& stop);
  Timed copy_on_device(uint64_t dst, uint64_t src, uint64_t size, const wire::RowShape& rows = {});
  // `size` bytes between the attached area at `offset` and the device at
  // `device` (to_device: area -> device); INVALID_VALUE outside the area or
  // without one.
  Timed copy_area(bool to_device, uint64_t device, uint64_t offset, uint64_t size);
  // cooperative: cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_COOPERATIVE (the
  // driver refuses a grid that cannot be resident at once); a cluster shape
  // other than {1, 1, 1}: with CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, unless
  // the kernel's shape is fixed at compile time (the daemon checked the
  // launch's is that one).
  Timed launch(uint64_t function, const uint32_t grid[3], const uint32_t block[3],
               uint32_t shared_mem, std::span<const uint8_t> params, bool cooperative = false,
               const uint32_t* cluster = nullptr);
  // Issues `items` in order, behind the items an earlier call left in
  // flight (a kCopyOut's bytes land in a page-locked buffer of its slot and
  // are appended to *out, padded to 8, when it finishes), with at most `depth`
  // (1..kMaxItemsInFlight) on the GPU at once, and issues no more once those finished in this call
  // have used `budget_ns`: so it may run past the budget by up to depth - 1 items after the one
  // that reached it. Appends to *done the result of each item that finished, oldest first (its time
  // between the events before and after it on its stream; a sticky error in flight reaches every
  // item after it). It returns once all have finished, except as `leave` says: then it returns as
  // soon as it stops issuing, the items still running left in flight (in_flight()), never after a
  // sticky error. Returns how many of `items` were issued: at least one, when there is one
  // (engine_batch.cpp).
  struct Leave {
    bool when_cut = false;  // when it stopped before the last of `items` (the budget)
    bool at_end = false;    // also when it issued them all
  };
  size_t run_items(std::span<const ItemSpec> items, uint64_t budget_ns, uint32_t depth, Leave leave,
                   std::vector<Timed>* done, std::vector<uint8_t>* out);
  // Waits for the items left in flight; appends their results to *done.
  void finish_items(std::vector<Timed>* done, std::vector<uint8_t>* out);
  // Items a batch left on the GPU.
  size_t in_flight() const { return issued_ - finished_; }
  // Guest streams the driver has now (made on first use, until destroyed).
  size_t guest_streams() const { return streams_.size(); }
  Timed synchronize();
  CUresult free(uint64_t dptr);
  CUresult destroy_event(uint64_t event);
  // A texture object as the daemon described it (over memory it checked is
  // the context's); *handle is the driver's value, which kernels take.
  CUresult texture_create(const CUDA_RESOURCE_DESC& res, const CUDA_TEXTURE_DESC& tex, uint64_t* handle);
  CUresult texture_destroy(uint64_t handle);
  // cudaLimitMallocHeapSize. The driver refuses a change once a kernel used
  // the heap (CUDA_ERROR_INVALID_VALUE).
  CUresult set_heap_size(uint64_t bytes);
  CUresult unload_module(uint64_t module);
  // cudaDeviceReset on a healthy context: frees what alloc() gave, destroys
  // events and guest streams, restores every variable's initial bytes.
  CUresult reset();

  // The first sticky error seen (CUDA_SUCCESS while healthy).
  CUresult sticky() const;

 private:
  struct Variable {
    CUdeviceptr dptr = 0;
    size_t bytes = 0;
    std::vector<uint8_t> initial;
  };
  struct Module {
    CUmodule handle = nullptr;
    std::map<std::string, Variable, std::less<>> variables;
  };
  struct Function {
    CUfunction handle = nullptr;
    uint64_t module = 0;
    bool fixed_cluster = false;  // __cluster_dims__: the launch gives no shape
    bool non_portable = false;   // allowed clusters over 8 blocks already
    uint32_t dynamic_shared_allowed = 48 * 1024;  // told the driver so far
  };

  // Records start, runs `issue` on the stream, records end, waits for it.
  Timed timed(const std::function<CUresult()>& issue);
  // Queues bytes [offset, offset + len) of a staged copy between `host` (the
  // packed side) and the device side at `device` (engine_copies.cpp).
  CUresult queue_piece(bool to_device, uint64_t device, const wire::RowShape& rows, uint64_t offset,
                       uint8_t* host, uint64_t len);
  // Puts one launch or batch item on `stream` (no timing, no wait).
  CUresult issue_launch(const LaunchSpec& l, CUstream stream);
  CUresult issue_item(const ItemSpec& item, CUstream stream);
  // The driver stream of a guest stream, made the first time (work thread).
  CUresult stream_for(const GuestStream& g, CUstream* out);
  CUevent event_of(uint64_t event) const;  // nullptr if unknown
  // Device time between two recorded, completed events (0 if unknown).
  uint64_t elapsed_ns(CUevent start, CUevent end) const;
  CUresult note(CUresult r);  // remembers sticky errors; returns r
  CUresult wait_event(CUevent e);

  const DriverApi& api_;
  CUdevice device_ = 0;
  bool have_context_ = false;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;          // the work
  CUstream control_stream_ = nullptr;  // the control half's own copies (never behind a kernel)
  CUevent start_ = nullptr, end_ = nullptr;      // around each work item
  CUevent slot_done_[kStagingSlots] = {};         // last copy through each slot
  // Batches' items, numbered from the first: item k runs between
  // slot_start_[k % kMaxItemsInFlight] and slot_end_[...] recorded on its
  // stream, whose slot is reused only once it has been timed. Items
  // [finished_, issued_) are on the GPU, their results so far in
  // flight_[k % kMaxItemsInFlight]. Work thread only.
  CUevent slot_start_[kMaxItemsInFlight] = {};
  CUevent slot_end_[kMaxItemsInFlight] = {};
  Timed flight_[kMaxItemsInFlight] = {};
  uint32_t flight_out_[kMaxItemsInFlight] = {};  // a kCopyOut's bytes, in its slot of out_buffer_
  size_t issued_ = 0, finished_ = 0;
  // kMaxInlineCopyBytes per slot for batched copies from the device,
  // page-locked when the driver allows (out_pinned_).
  std::vector<uint8_t> out_buffer_;
  bool out_pinned_ = false;
  // Guest stream handle -> the driver's stream. Work thread only.
  std::map<uint64_t, CUstream> streams_;
  // Appends a finished kCopyOut's bytes in `slot` (nothing for other items).
  void take_out(size_t slot, CUresult result, std::vector<uint8_t>* out) const;
  // Waits for item finished_ and appends its result (engine_batch.cpp).
  void finish_oldest(std::vector<Timed>* done, std::vector<uint8_t>* out);
  StagingArea* staging_ = nullptr;
  bool staging_pinned_ = false;
  uint8_t* area_ = nullptr;  // registered, once attach_area succeeded (guarded by mu_)
  uint64_t area_bytes_ = 0;

  mutable std::mutex mu_;
  // --- guarded by mu_ ---
  CUresult sticky_ = CUDA_SUCCESS;
  std::set<CUdeviceptr> allocations_;  // what alloc() handed out
  std::map<uint64_t, Module> modules_;
  std::map<uint64_t, Function> functions_;
  std::map<uint64_t, CUevent> events_;
  std::set<CUtexObject> textures_;
};

}  // namespace vgpu::executor::cuda
