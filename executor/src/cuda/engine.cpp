// The engine: context setup, the control half, and work other than copies
// (engine_copies.cpp).
#include "engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cu_status.h"

namespace vgpu::executor::cuda {
namespace {

constexpr uint32_t kMaxParamQueries = 32768;        // more than any kernel can have
constexpr size_t kMaxSnapshotBytes = 64ull << 20;   // bigger variables are not restored by reset

}  // namespace

Engine::~Engine() {
  if (!have_context_) return;
  bind_thread();
  api_.cuCtxSynchronize();
  for (auto& [h, st] : streams_) api_.cuStreamDestroy(st);
  for (auto& [h, e] : events_) api_.cuEventDestroy(e);
  for (auto& [h, m] : modules_) api_.cuModuleUnload(m.handle);
  for (CUdeviceptr p : allocations_) api_.cuMemFree(p);
  for (CUevent e : slot_done_) {
    if (e) api_.cuEventDestroy(e);
  }
  for (CUevent* slots : {slot_start_, slot_end_}) {
    for (size_t i = 0; i < kMaxItemsInFlight; ++i) {
      if (slots[i]) api_.cuEventDestroy(slots[i]);
    }
  }
  if (start_) api_.cuEventDestroy(start_);
  if (end_) api_.cuEventDestroy(end_);
  if (stream_) api_.cuStreamDestroy(stream_);
  if (control_stream_) api_.cuStreamDestroy(control_stream_);
  if (staging_pinned_) api_.cuMemHostUnregister(staging_->slots());
  if (out_pinned_) api_.cuMemHostUnregister(out_buffer_.data());
  if (area_) api_.cuMemHostUnregister(area_);
  api_.cuDevicePrimaryCtxRelease(device_);
}

CUresult Engine::init(int device_ordinal, unsigned ctx_flags, std::string* why) {
  auto fail = [&](const char* what, CUresult r) {
    *why = std::string(what) + ": " + error_name(api_, r);
    return r;
  };
  if (CUresult r = api_.cuInit(0); r != CUDA_SUCCESS) return fail("cuInit", r);
  int count = 0;
  if (CUresult r = api_.cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
    return fail("cuDeviceGetCount", r);
  }
  if (device_ordinal < 0 || device_ordinal >= count) {
    *why = "device " + std::to_string(device_ordinal) + " does not exist (the driver sees " +
           std::to_string(count) + ")";
    return count == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_ERROR_INVALID_DEVICE;
  }
  if (CUresult r = api_.cuDeviceGet(&device_, device_ordinal); r != CUDA_SUCCESS) {
    return fail("cuDeviceGet", r);
  }
  // Only possible before the primary context is active; it is not, in a fresh worker.
  api_.cuDevicePrimaryCtxSetFlags(device_, ctx_flags);
  if (CUresult r = api_.cuDevicePrimaryCtxRetain(&context_, device_); r != CUDA_SUCCESS) {
    return fail("cuDevicePrimaryCtxRetain", r);
  }
  have_context_ = true;
  if (CUresult r = bind_thread(); r != CUDA_SUCCESS) return fail("cuCtxSetCurrent", r);
  for (CUstream* s : {&stream_, &control_stream_}) {
    if (CUresult r = api_.cuStreamCreate(s, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) {
      return fail("cuStreamCreate", r);
    }
  }
  for (CUevent* e : {&start_, &end_}) {
    if (CUresult r = api_.cuEventCreate(e, CU_EVENT_DEFAULT); r != CUDA_SUCCESS) {
      return fail("cuEventCreate", r);
    }
  }
  for (CUevent* slots : {slot_start_, slot_end_}) {
    for (size_t i = 0; i < kMaxItemsInFlight; ++i) {
      if (CUresult r = api_.cuEventCreate(&slots[i], CU_EVENT_DEFAULT); r != CUDA_SUCCESS) {
        return fail("cuEventCreate", r);
      }
    }
  }
  for (CUevent& e : slot_done_) {
    if (CUresult r = api_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING); r != CUDA_SUCCESS) {
      return fail("cuEventCreate", r);
    }
  }
  // Unpinned, a batched copy from the device still works; the driver just
  // waits for it when it is issued.
  out_buffer_.assign(size_t{kMaxItemsInFlight} * wire::kMaxInlineCopyBytes, 0);
  out_pinned_ = api_.cuMemHostRegister(out_buffer_.data(), out_buffer_.size(), 0) == CUDA_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult Engine::bind_thread() const { return api_.cuCtxSetCurrent(context_); }

CUresult Engine::attach_staging(StagingArea* staging, bool pin) {
  staging_ = staging;
  if (!pin) return CUDA_SUCCESS;
  const CUresult r = api_.cuMemHostRegister(staging->slots(),
                                            kStagingSlots * staging->slot_bytes(), 0);
  staging_pinned_ = r == CUDA_SUCCESS;
  return r;
}

CUresult Engine::attach_area(uint8_t* area, uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (area_ || !area || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  }
  if (CUresult r = api_.cuMemHostRegister(area, bytes, 0); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(mu_);
  area_ = area;
  area_bytes_ = bytes;
  return CUDA_SUCCESS;
}

CUresult Engine::note(CUresult r) {
  if (r != CUDA_SUCCESS && is_sticky(r)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (sticky_ == CUDA_SUCCESS) sticky_ = r;
  }
  return r;
}

CUresult Engine::sticky() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sticky_;
}

CUresult Engine::wait_event(CUevent e) { return api_.cuEventSynchronize(e); }

Timed Engine::timed(const std::function<CUresult()>& issue) {
  Timed t;
  if (CUresult r = api_.cuEventRecord(start_, stream_); r != CUDA_SUCCESS) {
    t.result = note(r);
    return t;
  }
  const CUresult issued = issue();
  const CUresult recorded = api_.cuEventRecord(end_, stream_);
  const CUresult waited = recorded == CUDA_SUCCESS ? wait_event(end_) : recorded;
  t.result = note(issued != CUDA_SUCCESS ? issued : waited);
  if (waited == CUDA_SUCCESS) t.gpu_ns = elapsed_ns(start_, end_);
  return t;
}

uint64_t Engine::elapsed_ns(CUevent start, CUevent end) const {
  float ms = 0;
  if (api_.cuEventElapsedTime(&ms, start, end) != CUDA_SUCCESS || !std::isfinite(ms) || ms <= 0) {
    return 0;
  }
  return static_cast<uint64_t>(std::llround(static_cast<double>(ms) * 1e6));
}

// --- control -------------------------------------------------------------------

CUresult Engine::alloc(uint64_t size, uint64_t* dptr) {
  CUdeviceptr p = 0;
  if (CUresult r = note(api_.cuMemAlloc(&p, size)); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(mu_);
  allocations_.insert(p);
  *dptr = p;
  return CUDA_SUCCESS;
}

CUresult Engine::module_load(uint64_t module, const void* image) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (modules_.count(module)) return CUDA_ERROR_INVALID_VALUE;
  }
  CUmodule m = nullptr;
  if (CUresult r = note(api_.cuModuleLoadData(&m, image)); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(mu_);
  modules_[module].handle = m;
  return CUDA_SUCCESS;
}

CUresult Engine::function_get(uint64_t module, uint64_t function, const std::string& name,
                              std::vector<ParamSlot>* layout, bool* layout_known) {
  CUmodule m = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = modules_.find(module);
    if (it == modules_.end() || functions_.count(function)) return CUDA_ERROR_INVALID_HANDLE;
    m = it->second.handle;
  }
  CUfunction f = nullptr;
  if (CUresult r = note(api_.cuModuleGetFunction(&f, m, name.c_str())); r != CUDA_SUCCESS) {
    return r;
  }
  layout->clear();
  *layout_known = api_.cuFuncGetParamInfo != nullptr;
  for (uint32_t i = 0; *layout_known && i < kMaxParamQueries; ++i) {
    size_t offset = 0, size = 0;
    const CUresult r = api_.cuFuncGetParamInfo(f, i, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
    if (r != CUDA_SUCCESS) return note(r);
    layout->push_back({static_cast<uint32_t>(offset), static_cast<uint32_t>(size)});
  }
  int fixed_width = 0;
  if (api_.cuFuncGetAttribute(&fixed_width, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f) != CUDA_SUCCESS)
    fixed_width = 0;  // a device without clusters
  std::lock_guard<std::mutex> lock(mu_);
  functions_[function] = Function{f, module, fixed_width > 0};
  return CUDA_SUCCESS;
}

CUresult Engine::var_get(uint64_t module, const std::string& name, uint64_t* dptr,
                         uint64_t* bytes) {
  CUmodule m = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = modules_.find(module);
    if (it == modules_.end()) return CUDA_ERROR_INVALID_HANDLE;
    if (auto v = it->second.variables.find(name); v != it->second.variables.end()) {
      *dptr = v->second.dptr;
      *bytes = v->second.bytes;
      return CUDA_SUCCESS;
    }
    m = it->second.handle;
  }
  Variable v;
  if (CUresult r = note(api_.cuModuleGetGlobal(&v.dptr, &v.bytes, m, name.c_str()));
      r != CUDA_SUCCESS) {
    return r;
  }
  if (v.bytes > 0 && v.bytes <= kMaxSnapshotBytes) {
    v.initial.resize(v.bytes);
    CUresult r = api_.cuMemcpyDtoHAsync(v.initial.data(), v.dptr, v.bytes, control_stream_);
    if (r == CUDA_SUCCESS) r = api_.cuStreamSynchronize(control_stream_);
    if (note(r) != CUDA_SUCCESS) return r;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = modules_.find(module);
  if (it == modules_.end()) return CUDA_ERROR_INVALID_HANDLE;  // unloaded meanwhile
  *dptr = v.dptr;
  *bytes = v.bytes;
  it->second.variables.emplace(name, std::move(v));
  return CUDA_SUCCESS;
}

CUresult Engine::func_attributes(uint64_t function, KernelAttributes* out) {
  CUfunction f = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = functions_.find(function);
    if (it == functions_.end()) return CUDA_ERROR_INVALID_HANDLE;
    f = it->second.handle;
  }
  const std::pair<CUfunction_attribute, int32_t*> wanted[] = {
      {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &out->shared_size_bytes},
      {CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, &out->const_size_bytes},
      {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &out->local_size_bytes},
      {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &out->max_threads_per_block},
      {CU_FUNC_ATTRIBUTE_NUM_REGS, &out->num_regs},
      {CU_FUNC_ATTRIBUTE_PTX_VERSION, &out->ptx_version},
      {CU_FUNC_ATTRIBUTE_BINARY_VERSION, &out->binary_version},
  };
  for (const auto& [attr, dst] : wanted) {
    int v = 0;
    if (CUresult r = note(api_.cuFuncGetAttribute(&v, attr, f)); r != CUDA_SUCCESS) return r;
    *dst = v;
  }
  return CUDA_SUCCESS;
}

CUresult Engine::event_create(uint64_t event, unsigned flags) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (events_.count(event)) return CUDA_ERROR_INVALID_VALUE;
  }
  CUevent e = nullptr;
  if (CUresult r = note(api_.cuEventCreate(&e, flags)); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(mu_);
  events_[event] = e;
  return CUDA_SUCCESS;
}

CUresult Engine::event_elapsed(uint64_t start, uint64_t end, float* ms) {
  CUevent a = nullptr, b = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto ia = events_.find(start), ib = events_.find(end);
    if (ia == events_.end() || ib == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
    a = ia->second;
    b = ib->second;
  }
  return note(api_.cuEventElapsedTime(ms, a, b));
}

// --- work ----------------------------------------------------------------------

Timed Engine::launch(uint64_t function, const uint32_t grid[3], const uint32_t block[3],
                     uint32_t shared_mem, std::span<const uint8_t> params, bool cooperative,
                     const uint32_t* cluster) {
  LaunchSpec l{function, {grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}, shared_mem,
               cooperative, params};
  if (cluster) std::copy_n(cluster, 3, l.cluster);
  return timed([&] { return issue_launch(l, stream_); });
}

CUresult Engine::issue_launch(const LaunchSpec& l, CUstream stream) {
  CUfunction f = nullptr;
  bool fixed_cluster = false, non_portable = false;
  uint32_t shared_allowed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = functions_.find(l.function);
    if (it == functions_.end()) return CUDA_ERROR_INVALID_HANDLE;
    f = it->second.handle;
    fixed_cluster = it->second.fixed_cluster;
    non_portable = it->second.non_portable;
    shared_allowed = it->second.dynamic_shared_allowed;
  }
  // More than 48 KiB of dynamic shared memory: the guest's
  // cudaFuncSetAttribute allowed it (and checked the device's limit), and the
  // driver refuses the launch until it hears so too.
  if (l.shared_mem > shared_allowed) {
    if (!api_.cuFuncSetAttribute) return CUDA_ERROR_NOT_SUPPORTED;
    if (CUresult r = api_.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             static_cast<int>(l.shared_mem));
        r != CUDA_SUCCESS)
      return r;
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = functions_.find(l.function); it != functions_.end())
      it->second.dynamic_shared_allowed = l.shared_mem;
  }
  // The packed buffer is laid out as the kernel expects (the daemon checked
  // its size against the layout the driver reported); the driver only reads it.
  size_t bytes = l.params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<uint8_t*>(l.params.data()),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes, CU_LAUNCH_PARAM_END};
  const uint32_t cluster_blocks = l.cluster[0] * l.cluster[1] * l.cluster[2];
  // The guest allowed its kernel more than the portable 8 blocks a cluster
  // (cuFuncSetAttribute stays in the guest): the driver must hear it too.
  if (cluster_blocks > 8 && !non_portable) {
    if (!api_.cuFuncSetAttribute) return CUDA_ERROR_NOT_SUPPORTED;
    if (CUresult r = api_.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
        r != CUDA_SUCCESS)
      return r;
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = functions_.find(l.function); it != functions_.end()) it->second.non_portable = true;
  }
  CUlaunchAttribute attrs[2] = {};
  unsigned count = 0;
  if (l.cooperative) {
    attrs[count].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[count++].value.cooperative = 1;
  }
  if (cluster_blocks > 1 && !fixed_cluster) {
    attrs[count].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[count].value.clusterDim.x = l.cluster[0];
    attrs[count].value.clusterDim.y = l.cluster[1];
    attrs[count++].value.clusterDim.z = l.cluster[2];
  }
  if (count > 0) {
    // Only cuLaunchKernelEx takes a packed buffer with launch attributes.
    if (!api_.cuLaunchKernelEx) return CUDA_ERROR_NOT_SUPPORTED;
    CUlaunchConfig config{};
    config.gridDimX = l.grid[0];
    config.gridDimY = l.grid[1];
    config.gridDimZ = l.grid[2];
    config.blockDimX = l.block[0];
    config.blockDimY = l.block[1];
    config.blockDimZ = l.block[2];
    config.sharedMemBytes = l.shared_mem;
    config.hStream = stream;
    config.attrs = attrs;
    config.numAttrs = count;
    return api_.cuLaunchKernelEx(&config, f, nullptr, bytes > 0 ? extra : nullptr);
  }
  return api_.cuLaunchKernel(f, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                             l.shared_mem, stream, nullptr, bytes > 0 ? extra : nullptr);
}

CUevent Engine::event_of(uint64_t event) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = events_.find(event);
  return it == events_.end() ? nullptr : it->second;
}

Timed Engine::synchronize() {
  return timed([] { return CUDA_SUCCESS; });
}

CUresult Engine::free(uint64_t dptr) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!allocations_.count(dptr)) return CUDA_ERROR_INVALID_VALUE;
  }
  if (CUresult r = note(api_.cuMemFree(dptr)); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(mu_);
  allocations_.erase(dptr);
  return CUDA_SUCCESS;
}

CUresult Engine::destroy_event(uint64_t event) {
  CUevent e = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = events_.find(event);
    if (it == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
    e = it->second;
    events_.erase(it);
  }
  return note(api_.cuEventDestroy(e));
}

CUresult Engine::texture_create(const CUDA_RESOURCE_DESC& res, const CUDA_TEXTURE_DESC& tex, uint64_t* handle) {
  if (!api_.cuTexObjectCreate || !api_.cuTexObjectDestroy) return CUDA_ERROR_NOT_SUPPORTED;
  CUtexObject t = 0;
  if (CUresult r = note(api_.cuTexObjectCreate(&t, &res, &tex, nullptr)); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(mu_);
  textures_.insert(t);
  *handle = t;
  return CUDA_SUCCESS;
}

CUresult Engine::texture_destroy(uint64_t handle) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!textures_.erase(handle)) return CUDA_ERROR_INVALID_HANDLE;
  }
  return note(api_.cuTexObjectDestroy(handle));
}

CUresult Engine::set_heap_size(uint64_t bytes) {
  if (!api_.cuCtxSetLimit) return CUDA_ERROR_NOT_SUPPORTED;
  return note(api_.cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, bytes));
}

CUresult Engine::unload_module(uint64_t module) {
  CUmodule m = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = modules_.find(module);
    if (it == modules_.end()) return CUDA_ERROR_INVALID_HANDLE;
    m = it->second.handle;
    modules_.erase(it);
    std::erase_if(functions_, [&](const auto& f) { return f.second.module == module; });
  }
  return note(api_.cuModuleUnload(m));
}

CUresult Engine::reset() {
  if (CUresult r = note(api_.cuCtxSynchronize()); r != CUDA_SUCCESS) return r;
  std::set<CUdeviceptr> allocations;
  std::map<uint64_t, CUevent> events;
  std::set<CUtexObject> textures;
  std::vector<const Variable*> variables;
  {
    std::lock_guard<std::mutex> lock(mu_);
    allocations.swap(allocations_);
    events.swap(events_);
    textures.swap(textures_);
    for (const auto& [h, m] : modules_) {
      for (const auto& [name, v] : m.variables) {
        if (!v.initial.empty()) variables.push_back(&v);  // stable: only work unloads
      }
    }
  }
  CUresult first = CUDA_SUCCESS;
  auto keep = [&](CUresult r) {
    if (first == CUDA_SUCCESS) first = r;
  };
  for (const auto& [h, st] : streams_) keep(api_.cuStreamDestroy(st));
  streams_.clear();
  for (CUdeviceptr p : allocations) keep(api_.cuMemFree(p));
  for (const auto& [h, e] : events) keep(api_.cuEventDestroy(e));
  for (CUtexObject t : textures) keep(api_.cuTexObjectDestroy(t));
  for (const Variable* v : variables) {
    keep(api_.cuMemcpyHtoDAsync(v->dptr, v->initial.data(), v->bytes, stream_));
  }
  keep(api_.cuStreamSynchronize(stream_));
  return note(first);
}

}  // namespace vgpu::executor::cuda
