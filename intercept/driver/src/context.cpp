// Contexts: the primary context, created ones, the calling thread's stack of
// current contexts. Every context shares the process's one session on the
// host, so these calls are answered in the guest (but synchronisation, and
// destroying a created context, which frees what it made: context_objects.h).
#include <atomic>
#include <type_traits>
#include <vector>

#include "device_output.h"
#include "managed_memory.h"
#include "context_objects.h"
#include "driver_state.h"

namespace vgpu::driver {

namespace {

std::unordered_set<const Context*>& live_contexts() {
  static auto* s = new std::unordered_set<const Context*>;  // leaked: used until exit
  return *s;
}

// The calling thread's context stack; back() is current. Fixed and trivially
// destructible: NVIDIA's runtime makes driver calls from its exit handlers,
// which run after thread-local destructors. Initial-exec: every call reads
// it, and the general model would cost a __tls_get_addr call each time.
struct ContextStack {
  static constexpr int kDepth = 15;
  Context* items[kDepth];
  int size;
  bool empty() const { return size == 0; }
  Context* back() const { return items[size - 1]; }
  Context*& top() { return items[size - 1]; }
  bool push(Context* c) {
    if (size == kDepth) return false;
    items[size++] = c;
    return true;
  }
  void pop() { --size; }
  void erase(const Context* c) {
    int kept = 0;
    for (int i = 0; i < size; ++i) {
      if (items[i] != c) items[kept++] = items[i];
    }
    size = kept;
  }
};
static_assert(std::is_trivially_destructible_v<ContextStack>);
thread_local ContextStack stack __attribute__((tls_model("initial-exec")));
std::atomic<uint64_t> storage_generation_{0};

std::atomic<unsigned long long> next_id{2};

// Limits a program may read (and set: kept, not yet enforced by the host).
void default_limits(Context* c) {
  c->limits[CU_LIMIT_STACK_SIZE] = 1024;
  c->limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
  c->limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
  c->limits[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2;
  c->limits[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
  c->limits[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64;
  c->limits[CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0;
}

CUresult need_init() { return initialized() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }

CUresult synchronize() {
  CUresult r;
  {
    Connection& c = Connection::instance();
    Connection::Lock lock(c);
    proto::DeviceSynchronizeReply rep{};
    r = to_cu(intercept::with_async_errors(c, c.call(proto::DeviceSynchronizeRequest{}, {}, &rep)));
  }
  device_output::flush();
  managed::synchronized();
  return r;
}

CUresult create(CUcontext* pctx, unsigned flags, CUdevice dev) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  auto* c = new Context;
  c->device = dev;
  c->flags = flags;
  c->id = next_id++;
  default_limits(c);
  {
    std::lock_guard lock(context_mutex());
    live_contexts().insert(c);
  }
  if (!stack.push(c)) {
    cuCtxDestroy_v2(reinterpret_cast<CUcontext>(c));
    return CUDA_ERROR_OUT_OF_MEMORY;  // contexts nested deeper than the stack holds
  }
  *pctx = reinterpret_cast<CUcontext>(c);
  return CUDA_SUCCESS;
}

}  // namespace

std::mutex& context_mutex() {
  static auto* mu = new std::mutex;
  return *mu;
}

void storage_changed() { storage_generation_.fetch_add(1, std::memory_order_acq_rel); }
uint64_t storage_generation() { return storage_generation_.load(std::memory_order_acquire); }

Context* primary_context(CUdevice d) {
  static Context* primary = [] {
    auto* c = new Context;  // leaked: the runtime uses it until exit
    c->primary = true;
    c->id = 1;
    default_limits(c);
    std::lock_guard lock(context_mutex());
    live_contexts().insert(c);
    return c;
  }();
  return d == 0 ? primary : nullptr;
}

Context* as_context(CUcontext ctx) {
  auto* c = reinterpret_cast<Context*>(ctx);
  std::lock_guard lock(context_mutex());
  return live_contexts().count(c) ? c : nullptr;
}

Context* current_context() { return stack.empty() ? nullptr : stack.back(); }

Context* resolve_context(CUcontext ctx) { return ctx ? as_context(ctx) : current_context(); }

CUresult need_context() {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return current_context() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

}  // namespace vgpu::driver

using namespace vgpu;
using namespace vgpu::driver;

extern "C" {

// ---- the primary context ---------------------------------------------------------

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  Context* c = primary_context(dev);
  std::lock_guard lock(context_mutex());
  ++c->retains;
  *pctx = reinterpret_cast<CUcontext>(c);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  Context* c = primary_context(dev);
  std::lock_guard lock(context_mutex());
  if (c->retains <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  --c->retains;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned* flags, int* active) {
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  Context* c = primary_context(dev);
  std::lock_guard lock(context_mutex());
  *flags = c->flags;
  *active = c->retains > 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned flags) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  if (flags & CU_CTX_MAP_HOST) return refuse("CU_CTX_MAP_HOST (mapped pinned memory)");
  primary_context(dev)->flags = flags;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned flags) {
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

// Frees everything the process holds on the device, as the real reset does.
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::DeviceResetReply rep{};
  const Status s = intercept::with_async_errors(c, c.call(proto::DeviceResetRequest{}, {}, &rep));
  if (ok(s)) {
    owned::forget_all();  // the reset freed every context's objects: one session
    Context* p = primary_context(dev);
    std::lock_guard clock(context_mutex());
    for (auto& [key, stored] : p->storage) {
      if (stored.destructor) stored.destructor(reinterpret_cast<CUcontext>(p), key, stored.value);
    }
    p->storage.clear();
    storage_changed();
  }
  return to_cu(s);
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }

// ---- created contexts --------------------------------------------------------------

CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned flags, CUdevice dev) {
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  return create(pctx, flags, dev);
}

CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* params, int n, unsigned flags,
                        CUdevice dev) {
  if (params && n > 0) return refuse("cuCtxCreate with execution affinity");
  return cuCtxCreate_v2(pctx, flags, dev);
}

CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* params, unsigned flags, CUdevice dev) {
  if (params && (params->execAffinityParams || params->cigParams))
    return refuse("cuCtxCreate with execution affinity or CIG parameters");
  return cuCtxCreate_v2(pctx, flags, dev);
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  Context* c = as_context(ctx);
  if (!c || c->primary) return CUDA_ERROR_INVALID_CONTEXT;
  (void)synchronize();  // its work finishes first; a failure of it was reported already
  owned::release(c);    // then what it made is freed, as CUDA frees a context's objects
  {
    std::lock_guard lock(context_mutex());
    for (auto& [key, stored] : c->storage) {
      if (stored.destructor) stored.destructor(ctx, key, stored.value);
    }
    live_contexts().erase(c);
    storage_changed();
  }
  stack.erase(c);
  delete c;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  Context* c = as_context(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  return stack.push(c) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = reinterpret_cast<CUcontext>(stack.back());
  stack.pop();
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (!ctx) {
    if (!stack.empty()) stack.pop();
    return CUDA_SUCCESS;
  }
  Context* c = as_context(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  if (stack.empty()) stack.push(c);
  else stack.top() = c;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_init(); r != CUDA_SUCCESS) return r;
  *pctx = reinterpret_cast<CUcontext>(current_context());
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* dev) {
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  Context* c = current_context();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  *dev = c->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice_v2(CUdevice* dev, CUcontext ctx) {
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  Context* c = resolve_context(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  *dev = c->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned* flags) {
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  Context* c = current_context();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  *flags = c->flags;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetFlags(unsigned flags) {
  Context* c = current_context();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  if (flags & CU_CTX_MAP_HOST) return refuse("CU_CTX_MAP_HOST (mapped pinned memory)");
  c->flags = flags;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long* id) {
  if (!id) return CUDA_ERROR_INVALID_VALUE;
  Context* c = resolve_context(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  *id = c->id;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  if (!resolve_context(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *version = 3020;  // the context API version every current driver reports
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
  return synchronize();
}

CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  if (!resolve_context(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  return synchronize();
}

CUresult cuCtxGetLimit(size_t* value, CUlimit limit) {
  if (!value || limit < 0 || limit >= 16) return CUDA_ERROR_INVALID_VALUE;
  Context* c = current_context();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  *value = c->limits[limit];
  return CUDA_SUCCESS;
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  if (limit < 0 || limit >= 16) return CUDA_ERROR_INVALID_VALUE;
  Context* c = current_context();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  if (limit == CU_LIMIT_MALLOC_HEAP_SIZE && value != c->limits[limit]) {
    // The heap is on the host (the GPU's, or the sim worker's), charged to
    // the tenant there, which also refuses a change once a kernel used it.
    Connection& conn = Connection::instance();
    Connection::Lock lock(conn);
    proto::DeviceSetHeapSizeReply rep{};
    if (const Status s = conn.call(proto::DeviceSetHeapSizeRequest{value}, {}, &rep); !ok(s)) return to_cu(s);
  }
  c->limits[limit] = value;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCacheConfig(CUfunc_cache* config) {
  if (!config) return CUDA_ERROR_INVALID_VALUE;
  *config = CU_FUNC_CACHE_PREFER_NONE;
  return CUDA_SUCCESS;
}

// Cache and shared-memory preferences are hints CUDA may ignore; so does vgpu.
CUresult cuCtxSetCacheConfig(CUfunc_cache) { return CUDA_SUCCESS; }
CUresult cuCtxGetSharedMemConfig(CUsharedconfig* config) {
  if (!config) return CUDA_ERROR_INVALID_VALUE;
  *config = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetSharedMemConfig(CUsharedconfig) { return CUDA_SUCCESS; }
CUresult cuCtxResetPersistingL2Cache(void) { return CUDA_SUCCESS; }

CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  // The host accepts priorities in this range (streams of one tenant).
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return CUDA_SUCCESS;
}

}  // extern "C"
