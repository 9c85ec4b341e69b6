// FAKE CUDA DRIVER, for tests only (see fake_cuda.h).
#include "fake_cuda.h"

#include <signal.h>

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

#include "fake_state.h"
#include "fake_timeline.h"
#include "vgpu/fatbin/fatbin.h"

namespace vgpu::test::fake_cuda {

State& state() {
  static State* s = new State();  // never destroyed: workers exit with it alive
  return *s;
}

namespace {

using timeline::now_ns;

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

#define FAKE_GUARD                             \
  State& s = state();                          \
  std::lock_guard<std::mutex> lock(s.mu);      \
  if (!s.initialized) return CUDA_ERROR_NOT_INITIALIZED; \
  if (s.sticky != CUDA_SUCCESS) return s.sticky;

// A wait: until the modeled time `until`, then while a hang() runs; then
// reports a faulting kernel's error. Never with mu held.
CUresult wait_for_gpu(uint64_t until = 0) {
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

// wait_for_gpu() until what until_of(s) reads under mu (nothing: a bad handle).
template <class F>
CUresult wait_for(F until_of) {
  std::optional<uint64_t> until;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    until = until_of(s);
  }
  return until ? wait_for_gpu(*until) : CUDA_ERROR_INVALID_HANDLE;
}

}  // namespace

// --- the entry points (names and types from <cuda.h>) --------------------------
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

CUresult cuMemAlloc(CUdeviceptr* p, size_t bytes) {
  FAKE_GUARD
  if (!p || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > s.knobs.memory_bytes - std::min(s.used, s.knobs.memory_bytes)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  void* mem = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!mem) return CUDA_ERROR_OUT_OF_MEMORY;
  s.allocations[reinterpret_cast<uintptr_t>(mem)] = bytes;
  s.used += bytes;
  ++s.stats.live_allocations;
  *p = reinterpret_cast<uintptr_t>(mem);
  return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr p) {
  FAKE_GUARD
  auto it = s.allocations.find(p);
  if (it == s.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  s.used -= it->second;
  std::free(reinterpret_cast<void*>(p));
  s.allocations.erase(it);
  --s.stats.live_allocations;
  return CUDA_SUCCESS;
}

CUresult cuMemHostRegister(void* p, size_t bytes, unsigned int) {
  FAKE_GUARD
  if (s.knobs.register_fails) return CUDA_ERROR_NOT_PERMITTED;
  if (!p || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  s.registered[reinterpret_cast<uintptr_t>(p)] = bytes;
  ++s.stats.registered;
  return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void* p) {
  FAKE_GUARD
  if (!s.registered.erase(reinterpret_cast<uintptr_t>(p))) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  --s.stats.registered;
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream st) {
  FAKE_GUARD
  if (!device_range(s, dst, n) || !src) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void*>(dst), src, n);
  model_copy(s, st, n);
  ++s.stats.h2d_copies;
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream st) {
  FAKE_GUARD
  if (!device_range(s, src, n) || !dst) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, reinterpret_cast<const void*>(src), n);
  model_copy(s, st, n);
  ++s.stats.d2h_copies;
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st) {
  FAKE_GUARD
  if (!device_range(s, dst, n) || !device_range(s, src, n)) return CUDA_ERROR_INVALID_VALUE;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  model_copy(s, st, n);
  return CUDA_SUCCESS;
}

// Host sides are the caller's; device sides must lie in one allocation, as
// the real driver's do; pitches below the width are refused as it does.
CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D* c, CUstream st) {
  FAKE_GUARD
  if (!c || c->WidthInBytes == 0 || c->Height == 0) return c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (c->srcPitch < c->WidthInBytes || c->dstPitch < c->WidthInBytes) return CUDA_ERROR_INVALID_VALUE;
  auto side = [&](CUmemorytype type, const void* host, CUdeviceptr device, size_t x, size_t y, size_t pitch,
                  uintptr_t* out) {
    const size_t span = (c->Height - 1) * pitch + c->WidthInBytes;
    const uintptr_t base = (type == CU_MEMORYTYPE_HOST ? reinterpret_cast<uintptr_t>(host) : device) + y * pitch + x;
    *out = base;
    if (type == CU_MEMORYTYPE_HOST) return host != nullptr;
    return type == CU_MEMORYTYPE_DEVICE && device_range(s, base, span);
  };
  uintptr_t dst = 0, src = 0;
  if (!side(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, c->dstPitch, &dst) ||
      !side(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, c->srcPitch, &src)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t y = 0; y < c->Height; ++y) {
    std::memmove(reinterpret_cast<void*>(dst + y * c->dstPitch), reinterpret_cast<const void*>(src + y * c->srcPitch),
                 c->WidthInBytes);
  }
  model_copy(s, st, c->WidthInBytes * c->Height);
  ++s.stats.copies_2d;
  return CUDA_SUCCESS;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream st) {
  FAKE_GUARD
  if (!device_range(s, dst, n)) return CUDA_ERROR_INVALID_VALUE;
  std::memset(reinterpret_cast<void*>(dst), value, n);
  model_copy(s, st, n);
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  FAKE_GUARD
  if (!stream) return CUDA_ERROR_INVALID_VALUE;
  *stream = new CUstream_st{flags, 0};
  s.streams.insert(*stream);
  ++s.stats.live_streams;
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

CUresult launch_kernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                       unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                       CUstream st, void** params, void** extra);

CUresult check_cluster(CUfunction f, const unsigned grid[3], const uint32_t* given);

// A kernel with a compile-time cluster shape runs in it.
CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                        CUstream st, void** params, void** extra) {
  const unsigned grid[3] = {gx, gy, gz};
  if (CUresult r = check_cluster(f, grid, nullptr); r != CUDA_SUCCESS) return r;
  return launch_kernel(f, gx, gy, gz, bx, by, bz, shared, st, params, extra);
}

CUresult launch_kernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                       unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                       CUstream st, void** params, void** extra) {
  std::string name;
  std::vector<uint8_t> buf;
  {
    FAKE_GUARD
    if (!s.functions.count(f)) return CUDA_ERROR_INVALID_HANDLE;
    if (uint64_t{bx} * by * bz > 1024 || gx == 0 || gy == 0 || gz == 0 || shared > 232448) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    // As a GPU's driver: more than 48 KiB only once the function allows it.
    if (shared > 48 * 1024 && shared > static_cast<unsigned>(f->max_dynamic_shared)) return CUDA_ERROR_INVALID_VALUE;
    const fatbin::Kernel& k = *f->kernel;
    name = k.name;
    buf.assign(k.param_bytes, 0);
    if (extra) {  // CU_LAUNCH_PARAM_BUFFER_POINTER, p, CU_LAUNCH_PARAM_BUFFER_SIZE, &n, END
      void* p = nullptr;
      size_t* n = nullptr;
      for (void** e = extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
        if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER) p = e[1];
        if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE) n = static_cast<size_t*>(e[1]);
      }
      if (!p || !n || *n != k.param_bytes) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(buf.data(), p, *n);
    } else if (params) {
      for (size_t i = 0; i < k.params.size(); ++i) {
        std::memcpy(buf.data() + k.params[i].offset, params[i], k.params[i].size);
      }
    } else if (k.param_bytes != 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    ++s.stats.launches;
    s.stats.last_launch_param_bytes = buf.size();
    const uint64_t cost = timeline::kernel_cost(s.knobs, k, buf, uint64_t{gx} * gy * gz);
    s.stats.modeled_kernel_ns += cost;
    model(s, timeline::Engine::kCompute, st, cost);
    auto has = [&](const char* word) { return name.find(word) != std::string::npos; };
    if (has("heap")) {
      s.heap_used = true;
    } else if (has("fill") && buf.size() >= 16) {
      uintptr_t p = 0;
      int32_t value = 0, n = 0;
      std::memcpy(&p, buf.data(), 8);
      std::memcpy(&value, buf.data() + 8, 4);
      std::memcpy(&n, buf.data() + 12, 4);
      const uint64_t threads = uint64_t{gx} * gy * gz * bx * by * bz;
      const size_t count = static_cast<size_t>(std::min<uint64_t>(threads, n > 0 ? n : 0));
      if (count > 0 && !device_range(s, p, count * 4)) {
        s.pending = CUDA_ERROR_ILLEGAL_ADDRESS;  // out of bounds, as on a GPU
      } else {
        std::fill_n(reinterpret_cast<int32_t*>(p), count, value);
      }
    } else if (has("bump") && buf.size() >= 4) {
      int32_t delta = 0;
      std::memcpy(&delta, buf.data(), 4);
      auto g = f->module->globals.find("counter");
      if (g != f->module->globals.end()) *reinterpret_cast<int32_t*>(g->second.first) += delta;
    } else if (has("say") && buf.size() >= 4) {  // printf("say %d\n", tag) in each thread
      int32_t tag = 0;
      std::memcpy(&tag, buf.data(), 4);
      const uint64_t threads = uint64_t{gx} * gy * gz * bx * by * bz;
      for (uint64_t t = 0; t < std::min<uint64_t>(threads, 64); ++t)
        s.printf_fifo += "say " + std::to_string(tag) + " thread " + std::to_string(t) + "\n";
    } else if (has("tex_read") && buf.size() >= 24) {  // *out = texel (x, y) of a pitch2D float texture
      CUtexObject t = 0;
      int32_t x = 0, y = 0;
      uintptr_t out = 0;
      std::memcpy(&t, buf.data(), 8);
      std::memcpy(&x, buf.data() + 8, 4);
      std::memcpy(&y, buf.data() + 12, 4);
      std::memcpy(&out, buf.data() + 16, 8);
      auto it = s.textures.find(t);
      if (it == s.textures.end() || it->second.resType != CU_RESOURCE_TYPE_PITCH2D || !device_range(s, out, 4)) {
        s.pending = CUDA_ERROR_ILLEGAL_ADDRESS;
      } else {
        const auto& p = it->second.res.pitch2D;
        const uintptr_t at = p.devPtr + static_cast<uintptr_t>(y) * p.pitchInBytes + static_cast<uintptr_t>(x) * 4;
        if (!device_range(s, at, 4)) s.pending = CUDA_ERROR_ILLEGAL_ADDRESS;
        else std::memcpy(reinterpret_cast<void*>(out), reinterpret_cast<const void*>(at), 4);
      }
    } else if (has("hang")) {
      s.hung = true;
    } else if (has("fault")) {
      s.pending = CUDA_ERROR_ILLEGAL_ADDRESS;
    } else if (has("trap")) {
      s.pending = CUDA_ERROR_LAUNCH_FAILED;
    }
  }
  if (name.find("crash") != std::string::npos) raise(SIGSEGV);
  if (name.find("spin") != std::string::npos && buf.size() >= 8) {
    uint64_t ns = 0;
    std::memcpy(&ns, buf.data(), 8);
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<uint64_t>(ns, 5'000'000'000ull)));
  }
  return CUDA_SUCCESS;
}

// Texture objects over device memory the fake gave out (pitch2D and linear
// resources, as the backend makes them).
CUresult cuTexObjectCreate(CUtexObject* out, const CUDA_RESOURCE_DESC* res, const CUDA_TEXTURE_DESC* tex,
                           const CUDA_RESOURCE_VIEW_DESC* view) {
  FAKE_GUARD
  if (!out || !res || !tex || view) return CUDA_ERROR_INVALID_VALUE;
  if (res->resType == CU_RESOURCE_TYPE_PITCH2D) {
    const auto& p = res->res.pitch2D;
    if (p.pitchInBytes % 32 != 0 || !device_range(s, p.devPtr, p.pitchInBytes * p.height)) return CUDA_ERROR_INVALID_VALUE;
  } else if (res->resType == CU_RESOURCE_TYPE_LINEAR) {
    if (!device_range(s, res->res.linear.devPtr, res->res.linear.sizeInBytes)) return CUDA_ERROR_INVALID_VALUE;
  } else {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *out = s.next_texture++;
  s.textures[*out] = *res;
  ++s.stats.live_textures;
  return CUDA_SUCCESS;
}

// As a GPU's driver: the heap's size is fixed once a kernel used it.
CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  FAKE_GUARD
  if (limit != CU_LIMIT_MALLOC_HEAP_SIZE) return CUDA_ERROR_UNSUPPORTED_LIMIT;
  if (s.heap_used && value != s.stats.heap_bytes) return CUDA_ERROR_INVALID_VALUE;
  s.stats.heap_bytes = value;
  return CUDA_SUCCESS;
}

CUresult cuTexObjectDestroy(CUtexObject t) {
  FAKE_GUARD
  if (!s.textures.erase(t)) return CUDA_ERROR_INVALID_VALUE;
  --s.stats.live_textures;
  return CUDA_SUCCESS;
}

// Clusters as an sm_90 driver checks them: a kernel whose shape is fixed at
// compile time takes no other, each grid dimension a multiple of the shape,
// at most 8 blocks unless the kernel allows 16.
CUresult check_cluster(CUfunction f, const unsigned grid[3], const uint32_t* given) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.functions.count(f)) return CUDA_ERROR_INVALID_HANDLE;
  const uint32_t* fixed = f->kernel->cluster[0] != 0 ? f->kernel->cluster : nullptr;
  if (fixed && given) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  const uint32_t* shape = fixed ? fixed : given;
  if (!shape) return CUDA_SUCCESS;
  const uint64_t blocks = uint64_t{shape[0]} * shape[1] * shape[2];
  if (blocks == 1) return CUDA_SUCCESS;
  for (int i = 0; i < 3; ++i)
    if (shape[i] == 0 || grid[i] % shape[i] != 0) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  if (blocks > (f->non_portable_cluster ? 16u : 8u)) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  ++s.stats.cluster_launches;
  std::copy_n(shape, 3, s.stats.last_cluster);
  return CUDA_SUCCESS;
}

// The cooperative and cluster attributes mean something to the fake; a
// cooperative grid must fit the fake device at once (132 multiprocessors, 32
// blocks each).
CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  if (!config || (config->numAttrs > 0 && !config->attrs)) return CUDA_ERROR_INVALID_VALUE;
  bool cooperative = false;
  uint32_t cluster[3] = {};
  bool has_cluster = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) cooperative = a.value.cooperative != 0;
    if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      has_cluster = true;
      cluster[0] = a.value.clusterDim.x;
      cluster[1] = a.value.clusterDim.y;
      cluster[2] = a.value.clusterDim.z;
    }
  }
  const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
  if (CUresult r = check_cluster(f, grid, has_cluster ? cluster : nullptr); r != CUDA_SUCCESS) return r;
  if (cooperative) {
    const uint64_t blocks = uint64_t{config->gridDimX} * config->gridDimY * config->gridDimZ;
    if (blocks > 132 * 32) return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    ++s.stats.cooperative_launches;
  }
  return launch_kernel(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                       config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream, params,
                       extra);
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
