// Stream-ordered allocation (cuMemAllocAsync, cuMemFreeAsync) and memory
// pools. An allocation is made at once (so it is ready for any work queued
// after it in any stream); a free waits for the work queued before it in its
// stream, then frees. A pool is the guest's bookkeeping (attributes, bytes in
// use); the memory is the tenant's device memory, under its quota, either way.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "driver_state.h"

using namespace vgpu;
using namespace vgpu::driver;

namespace {

struct Pool {
  cuuint64_t release_threshold = 0;
  int reuse_follow_event_dependencies = 1;
  int reuse_allow_opportunistic = 1;
  int reuse_allow_internal_dependencies = 1;
  cuuint64_t used = 0, used_high = 0;
};

struct Pools {
  std::mutex mu;
  Pool default_pool;
  Pool* current = &default_pool;  // cuDeviceSetMemPool's choice
  std::set<Pool*> created;
  std::map<CUdeviceptr, std::pair<Pool*, size_t>> live;  // allocation -> pool, bytes

  static Pools& instance() {
    static Pools* p = new Pools;  // leaked: used until exit
    return *p;
  }
  // The pool behind a handle, or null (mu held).
  Pool* find(CUmemoryPool handle) {
    auto* p = reinterpret_cast<Pool*>(handle);
    return p == &default_pool || created.count(p) ? p : nullptr;
  }
};

CUmemoryPool handle(Pool* p) { return reinterpret_cast<CUmemoryPool>(p); }

CUresult alloc_from(Pool* pool, CUdeviceptr* dptr, size_t size) {
  if (CUresult r = cuMemAlloc_v2(dptr, size); r != CUDA_SUCCESS) return r;
  Pools& ps = Pools::instance();
  std::lock_guard lock(ps.mu);
  ps.live[*dptr] = {pool, size};
  pool->used += size;
  pool->used_high = std::max(pool->used_high, pool->used);
  return CUDA_SUCCESS;
}

bool is_this_device(const CUmemLocation* l) {
  return l && l->type == CU_MEM_LOCATION_TYPE_DEVICE && l->id == 0;
}

}  // namespace

extern "C" {

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t size, CUstream) {
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  Pool* pool = nullptr;
  {
    Pools& ps = Pools::instance();
    std::lock_guard lock(ps.mu);
    pool = ps.current;
  }
  return alloc_from(pool, dptr, size);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t size, CUmemoryPool handle_in, CUstream) {
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  Pool* pool = nullptr;
  {
    Pools& ps = Pools::instance();
    std::lock_guard lock(ps.mu);
    pool = ps.find(handle_in);
  }
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  return alloc_from(pool, dptr, size);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (dptr == 0) return CUDA_ERROR_INVALID_VALUE;
  // Work queued before the free in its stream may still use the memory.
  if (CUresult r = cuStreamSynchronize(stream); r != CUDA_SUCCESS) return r;
  if (CUresult r = cuMemFree_v2(dptr); r != CUDA_SUCCESS) return r;
  Pools& ps = Pools::instance();
  std::lock_guard lock(ps.mu);
  if (auto it = ps.live.find(dptr); it != ps.live.end()) {
    if (Pool* p = ps.find(handle(it->second.first))) p->used -= it->second.second;
    ps.live.erase(it);
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice dev) {
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  *pool = handle(&Pools::instance().default_pool);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  Pools& ps = Pools::instance();
  std::lock_guard lock(ps.mu);
  *pool = handle(ps.current);
  return CUDA_SUCCESS;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  if (CUresult r = check_device(dev); r != CUDA_SUCCESS) return r;
  Pools& ps = Pools::instance();
  std::lock_guard lock(ps.mu);
  Pool* p = ps.find(pool);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  ps.current = p;
  return CUDA_SUCCESS;
}

CUresult cuMemGetDefaultMemPool(CUmemoryPool* pool, CUmemLocation* location, CUmemAllocationType type) {
  if (!pool || !is_this_device(location) || type != CU_MEM_ALLOCATION_TYPE_PINNED)
    return CUDA_ERROR_INVALID_VALUE;
  return cuDeviceGetDefaultMemPool(pool, 0);
}

CUresult cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* location, CUmemAllocationType type) {
  if (!pool || !is_this_device(location) || type != CU_MEM_ALLOCATION_TYPE_PINNED)
    return CUDA_ERROR_INVALID_VALUE;
  return cuDeviceGetMemPool(pool, 0);
}

CUresult cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type, CUmemoryPool pool) {
  if (!is_this_device(location) || type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  return cuDeviceSetMemPool(0, pool);
}

CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      !is_this_device(&props->location))
    return CUDA_ERROR_INVALID_VALUE;
  if (props->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
    return refuse("cuMemPoolCreate with shareable handles (IPC between processes)");
  Pools& ps = Pools::instance();
  std::lock_guard lock(ps.mu);
  auto* p = new Pool;
  ps.created.insert(p);
  *pool = handle(p);
  return CUDA_SUCCESS;
}

// Allocations still live keep their memory; they are freed by cuMemFree or
// cuMemFreeAsync as usual.
CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  Pools& ps = Pools::instance();
  std::lock_guard lock(ps.mu);
  auto* p = reinterpret_cast<Pool*>(pool);
  if (!ps.created.erase(p)) return CUDA_ERROR_INVALID_VALUE;
  if (ps.current == p) ps.current = &ps.default_pool;
  for (auto it = ps.live.begin(); it != ps.live.end();) {
    it = it->second.first == p ? ps.live.erase(it) : std::next(it);
  }
  delete p;
  return CUDA_SUCCESS;
}

// Freed memory goes back to the tenant at once: nothing is kept to trim.
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t) {
  Pools& ps = Pools::instance();
  std::lock_guard lock(ps.mu);
  return ps.find(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  Pools& ps = Pools::instance();
  std::lock_guard lock(ps.mu);
  Pool* p = ps.find(pool);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  // Flags are ints, sizes 64-bit, as cuda.h documents each attribute.
  auto flag = [value] { return *static_cast<const int*>(value); };
  auto bytes = [value] { return *static_cast<const cuuint64_t*>(value); };
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: p->reuse_follow_event_dependencies = flag(); break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: p->reuse_allow_opportunistic = flag(); break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: p->reuse_allow_internal_dependencies = flag(); break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: p->release_threshold = bytes(); break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (bytes() != 0) return CUDA_ERROR_INVALID_VALUE;  // only a reset is allowed
      p->used_high = p->used;
      break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  Pools& ps = Pools::instance();
  std::lock_guard lock(ps.mu);
  Pool* p = ps.find(pool);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  auto* flag = static_cast<int*>(value);
  auto* bytes = static_cast<cuuint64_t*>(value);
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: *flag = p->reuse_follow_event_dependencies; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: *flag = p->reuse_allow_opportunistic; break;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *flag = p->reuse_allow_internal_dependencies; break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *bytes = p->release_threshold; break;
    // Memory in use is all the pool holds: it keeps nothing in reserve.
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *bytes = p->used; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *bytes = p->used_high; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  Pools& ps = Pools::instance();
  std::lock_guard lock(ps.mu);
  if (!ps.find(pool) || (count && !map)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (!is_this_device(&map[i].location)) return CUDA_ERROR_INVALID_DEVICE;  // one GPU per VM
  }
  return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool pool, CUmemLocation* location) {
  Pools& ps = Pools::instance();
  std::lock_guard lock(ps.mu);
  if (!flags || !location || !ps.find(pool)) return CUDA_ERROR_INVALID_VALUE;
  *flags = is_this_device(location) ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}

}  // extern "C"
