// FAKE CUDA DRIVER, for tests only (see fake_cuda.h): its state and timeline
// helpers, and the entry points for the device, contexts, streams, events
// and modules (memory: fake_memory.cpp; launches: fake_launch.cpp).
#include "fake_cuda.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "fake_internal.h"
#include "vgpu/fatbin/fatbin.h"

namespace vgpu::test::fake_cuda {

State& state() {
  static State* s = new State();  // never destroyed: workers exit with it alive
  return *s;
}

// Where a stream's last end is kept: the special streams (and any handle the
// fake did not make) share the process's default stream. mu held.
uint64_t* stream_until(State& s, CUstream st) {
  if (st && st != CU_STREAM_LEGACY && st != CU_STREAM_PER_THREAD && s.streams.count(st)) return &st->until;
  return &s.default_until;
}

// Where st's end is kept, after CUDA's rule for the legacy default stream:
// its work waits for every blocking stream's, and a blocking stream's waits
// for its. mu held.
uint64_t* stream_ready(State& s, CUstream st) {
  uint64_t* until = stream_until(s, st);
  if (until == &s.default_until) {
    for (const CUstream_st* o : s.streams) {
      if (!(o->flags & CU_STREAM_NON_BLOCKING))
        s.default_until = std::max(s.default_until, o->until);
    }
  } else if (!(st->flags & CU_STREAM_NON_BLOCKING)) {
    *until = std::max(*until, s.default_until);
  }
  return until;
}

// Puts work of cost_ns on the modeled device's timeline. mu held.
void model(State& s, timeline::Engine engine, CUstream st, uint64_t cost_ns) {
  s.issued_until = std::max(s.issued_until, timeline::issue(engine, stream_ready(s, st), cost_ns));
}

void model_copy(State& s, CUstream st, size_t n) {
  model(s, timeline::Engine::kCopy, st, timeline::copy_cost(s.knobs, n));
}

// Whether [p, p + n) lies in one allocation or module variable. mu held.
bool device_range(State& s, uintptr_t p, size_t n) {
  auto it = s.allocations.upper_bound(p);
  if (it != s.allocations.begin()) {
    --it;
    if (p >= it->first && n <= it->second && p - it->first <= it->second - n) return true;
  }
  for (CUmod_st* m : s.modules) {
    for (const auto& [name, g] : m->globals) {
      const auto base = reinterpret_cast<uintptr_t>(g.first);
      if (p >= base && n <= g.second && p - base <= g.second - n) return true;
    }
  }
  return false;
}

// A wait: until the modeled time `until`, then while a hang() runs; then
// reports a faulting kernel's error. Never with mu held.
CUresult wait_for_gpu(uint64_t until) {
  timeline::wait_until(until);
  State& s = state();
  while (s.hung.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!s.printf_fifo.empty()) {
    std::fputs(s.printf_fifo.c_str(), stdout);
    s.printf_fifo.clear();
  }
  if (s.pending != CUDA_SUCCESS) {
    s.sticky = s.pending;
    s.pending = CUDA_SUCCESS;
  }
  return s.sticky;
}

namespace api {

CUresult cuInit(unsigned int flags) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (s.knobs.init_fails) return CUDA_ERROR_NO_DEVICE;
  s.initialized = true;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = state().knobs.driver_version;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult r, const char** out) {
  static const std::map<CUresult, const char*> names = {
      {CUDA_SUCCESS, "CUDA_SUCCESS"},
      {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
      {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
      {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
      {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
      {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
      {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
      {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
      {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
      {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"},
      {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"},
      {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED"},
  };
  auto it = names.find(r);
  if (!out || it == names.end()) return CUDA_ERROR_INVALID_VALUE;
  *out = it->second;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  FAKE_GUARD
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = s.knobs.device_count;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  FAKE_GUARD
  if (!dev || ordinal < 0 || ordinal >= s.knobs.device_count) return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice) {
  FAKE_GUARD
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<size_t>(len), "%s", "Fake H200 (vgpu tests)");
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  FAKE_GUARD
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < 16; ++i) uuid->bytes[i] = static_cast<char>(0xf0 + dev + i);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t* bytes, CUdevice) {
  FAKE_GUARD
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = s.knobs.memory_bytes;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attr, CUdevice) {
  FAKE_GUARD
  if (!value || attr <= 0 || attr >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *value = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *value = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *value = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *value = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *value = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 232448; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *value = 1; break;
    default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice, unsigned int) {
  FAKE_GUARD
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  FAKE_GUARD
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  s.primary.device = dev;
  *ctx = &s.primary;
  ++s.stats.primary_retains;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  --s.stats.primary_retains;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  FAKE_GUARD
  return ctx == &s.primary ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// This process's work: other processes sharing a device file wait for their own.
CUresult cuCtxSynchronize() {
  return wait_for([](State& s) -> std::optional<uint64_t> { return s.issued_until; });
}

CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  FAKE_GUARD
  if (!stream) return CUDA_ERROR_INVALID_VALUE;
  *stream = new CUstream_st{flags, 0};
  s.streams.insert(*stream);
  ++s.stats.live_streams;
  ++s.stats.streams_created;
  return CUDA_SUCCESS;
}

CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int flags, int priority) {
  if (priority > 0 || priority < -5) return CUDA_ERROR_INVALID_VALUE;  // an H200's range is [-5, 0]
  return api::cuStreamCreate(stream, flags);
}

// Later work on st starts once the event's work has ended.
CUresult cuStreamWaitEvent(CUstream st, CUevent event, unsigned int flags) {
  FAKE_GUARD
  if (!s.events.count(event) || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (event->recorded) {
    uint64_t* until = stream_ready(s, st);
    *until = std::max(*until, event->ns);
  }
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream stream) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.streams.erase(stream)) return CUDA_ERROR_INVALID_HANDLE;
  delete stream;
  --s.stats.live_streams;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream st) {
  return wait_for([&](State& s) -> std::optional<uint64_t> { return *stream_ready(s, st); });
}

CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  FAKE_GUARD
  if (!event || (flags & ~0xfu)) return CUDA_ERROR_INVALID_VALUE;
  *event = new CUevent_st{flags, false, 0};
  s.events.insert(*event);
  ++s.stats.live_events;
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent event) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.events.erase(event)) return CUDA_ERROR_INVALID_HANDLE;
  delete event;
  --s.stats.live_events;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream st) {
  FAKE_GUARD
  if (!s.events.count(event)) return CUDA_ERROR_INVALID_HANDLE;
  event->recorded = true;
  event->ns = std::max(now_ns(), *stream_ready(s, st));  // once the work before it ends
  return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent event) {
  return wait_for([&](State& s) -> std::optional<uint64_t> {
    if (!s.events.count(event)) return std::nullopt;
    return event->recorded ? event->ns : 0;
  });
}

CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  FAKE_GUARD
  if (!ms || !s.events.count(start) || !s.events.count(end)) return CUDA_ERROR_INVALID_HANDLE;
  if (!start->recorded || !end->recorded || ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  *ms = static_cast<float>(static_cast<double>(static_cast<int64_t>(end->ns - start->ns)) / 1e6);
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  FAKE_GUARD
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  // A fat binary announces its size in its header: 16 bytes + payload.
  uint64_t payload = 0;
  std::memcpy(&payload, static_cast<const uint8_t*>(image) + 8, sizeof payload);
  auto m = std::make_unique<CUmod_st>();
  if (payload > (1ull << 30) ||
      fatbin::parse({static_cast<const uint8_t*>(image), 16 + payload}, &m->image) !=
          fatbin::Error::kNone) {
    return CUDA_ERROR_INVALID_IMAGE;
  }
  for (const fatbin::Variable& v : m->image.variables) {
    if (v.size == 0) continue;
    auto* mem = static_cast<uint8_t*>(std::calloc(1, v.size));
    std::memcpy(mem, v.init.data(), std::min<size_t>(v.init.size(), v.size));
    m->globals[v.name] = {mem, v.size};
  }
  *module = m.release();
  s.modules.insert(*module);
  ++s.stats.live_modules;
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule module) {
  FAKE_GUARD
  if (!s.modules.erase(module)) return CUDA_ERROR_INVALID_HANDLE;
  std::erase_if(s.functions, [&](CUfunc_st* f) {
    if (f->module != module) return false;
    delete f;
    return true;
  });
  for (auto& [name, g] : module->globals) std::free(g.first);
  delete module;
  --s.stats.live_modules;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* f, CUmodule module, const char* name) {
  FAKE_GUARD
  if (!f || !name || !s.modules.count(module)) return CUDA_ERROR_INVALID_HANDLE;
  const fatbin::Kernel* k = module->image.find_kernel(name);
  if (!k) return CUDA_ERROR_NOT_FOUND;
  *f = new CUfunc_st{module, k};
  s.functions.insert(*f);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUmodule module, const char* name) {
  FAKE_GUARD
  if (!name || !s.modules.count(module)) return CUDA_ERROR_INVALID_HANDLE;
  auto it = module->globals.find(name);
  if (it == module->globals.end()) return CUDA_ERROR_NOT_FOUND;
  if (dptr) *dptr = reinterpret_cast<uintptr_t>(it->second.first);
  if (bytes) *bytes = it->second.second;
  return CUDA_SUCCESS;
}

CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attr, CUfunction f) {
  FAKE_GUARD
  if (!value || !s.functions.count(f)) return CUDA_ERROR_INVALID_HANDLE;
  switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = 16; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: *value = static_cast<int>(f->kernel->cluster[0]); break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT: *value = static_cast<int>(f->kernel->cluster[1]); break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *value = static_cast<int>(f->kernel->cluster[2]); break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *value = f->non_portable_cluster; break;
    default: *value = 0; break;
  }
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute attr, int value) {
  FAKE_GUARD
  if (!s.functions.count(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (attr == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (value < 0 || value > 232448) return CUDA_ERROR_INVALID_VALUE;  // an H200's opt-in limit
    f->max_dynamic_shared = value;
    return CUDA_SUCCESS;
  }
  if (attr != CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) return CUDA_ERROR_INVALID_VALUE;
  f->non_portable_cluster = value != 0;
  return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t* offset, size_t* size) {
  FAKE_GUARD
  if (!s.functions.count(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (index >= f->kernel->params.size()) return CUDA_ERROR_INVALID_VALUE;
  const fatbin::Param& p = f->kernel->params[index];
  const bool skew = !s.knobs.skew_kernel.empty() &&
                    f->kernel->name.find(s.knobs.skew_kernel) != std::string::npos && index == 0;
  if (offset) *offset = p.offset + (skew ? 4 : 0);
  if (size) *size = p.size;
  return CUDA_SUCCESS;
}

}  // namespace api

// --- ways in ---------------------------------------------------------------------

void install(executor::cuda::DriverApi* out) {
  *out = executor::cuda::DriverApi{};
#define FAKE_INSTALL(name, required) out->name = &api::name;
  VGPU_CUDA_DRIVER_FUNCTIONS(FAKE_INSTALL)
#undef FAKE_INSTALL
}

void* lookup(const char* name) {
  if (!name) return nullptr;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.knobs.missing_entry == name) return nullptr;
  }
#define FAKE_LOOKUP(fn, required) \
  if (std::strcmp(name, #fn) == 0) return reinterpret_cast<void*>(&api::fn);
  VGPU_CUDA_DRIVER_FUNCTIONS(FAKE_LOOKUP)
#undef FAKE_LOOKUP
  return nullptr;
}

}  // namespace vgpu::test::fake_cuda
