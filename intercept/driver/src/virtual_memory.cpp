// Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap,
// cuMemSetAccess, ...), emulated over ordinary device allocations: vgpud
// gives each tenant one address space it allocates in and maps nothing on
// request. A reserved range is a device allocation of its size, so it counts
// against the tenant's memory cap when it is reserved (on a GPU, when memory
// is created); a handle from cuMemCreate holds no memory of its own while it
// is mapped: its bytes are the part of the range it is mapped at. Unmapping a
// handle that is still alive copies its bytes aside on the device, and its
// next map copies them back, as its physical memory would keep them.
//
// What the emulation cannot do is refused by name: one handle mapped at two
// addresses at once (aliasing), a map of part of a handle, read-only or
// revoked access, handles shared with other processes (export/import, which
// stay refused stubs).
#include <cuda.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>

#include "device_memory.h"
#include "driver_state.h"
#include "memory_ops.h"

using namespace vgpu;
using namespace vgpu::driver;
using driver::ops::device_alloc;
using driver::ops::device_free;
using intercept::DeviceMemory;

namespace {

// What CUDA reports on current GPUs for both the minimum and the recommended
// granularity; sizes and offsets must be multiples of it.
constexpr size_t kGranularity = size_t{2} << 20;

struct Handle {
  size_t size = 0;
  CUmemAllocationProp prop{};
  uint64_t mapped_at = 0;  // 0: not mapped
  uint64_t saved = 0;      // a device allocation holding its bytes while unmapped (0: none)
  int refs = 1;            // cuMemCreate and each cuMemRetainAllocationHandle
};

struct Range {
  uint64_t allocation = 0;  // what vgpud allocated (base rounded up for alignment)
  size_t size = 0;
  std::map<uint64_t, Handle*> maps;  // by address
};

std::mutex& mu() {
  static auto* m = new std::mutex;  // leaked: used until exit
  return *m;
}
std::map<uint64_t, Range>& ranges() {  // by base
  static auto* r = new std::map<uint64_t, Range>;
  return *r;
}
std::map<Handle*, bool>& handles() {
  static auto* h = new std::map<Handle*, bool>;
  return *h;
}

Handle* find_handle(CUmemGenericAllocationHandle h) {
  auto* p = reinterpret_cast<Handle*>(static_cast<uintptr_t>(h));
  return handles().count(p) ? p : nullptr;
}

// The reserved range holding all of [p, p + n), or nullptr.
Range* range_of(uint64_t p, size_t n, uint64_t* base = nullptr) {
  auto& r = ranges();
  auto it = r.upper_bound(p);
  if (it == r.begin()) return nullptr;
  --it;
  if (p - it->first > it->second.size || n > it->second.size - (p - it->first)) return nullptr;
  if (base) *base = it->first;
  return &it->second;
}

CUresult check_prop(const CUmemAllocationProp* prop) {
  if (!prop) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return refuse("virtual memory allocations located on the host or a NUMA node");
  }
  if (prop->location.id != 0) return CUDA_ERROR_INVALID_DEVICE;  // one virtual GPU per VM
  if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE) {
    return refuse("virtual memory allocations shared with other processes (requestedHandleTypes)");
  }
  if (prop->allocFlags.compressionType != 0) return refuse("compressible memory");
  return CUDA_SUCCESS;
}

void destroy(Handle* h) {
  if (h->saved) (void)device_free(h->saved);
  handles().erase(h);
  delete h;
}

}  // namespace

extern "C" {

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  if (!granularity) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_prop(prop); r != CUDA_SUCCESS) return r;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return CUDA_ERROR_INVALID_VALUE;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr,
                             unsigned long long flags) {
  if (!ptr || size == 0 || size % kGranularity != 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (alignment == 0) alignment = kGranularity;
  if ((alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t allocation = 0;  // the address hint is only a hint: it is not followed
  if (size + alignment < size) return CUDA_ERROR_OUT_OF_MEMORY;
  if (CUresult r = device_alloc(size + alignment, &allocation); r != CUDA_SUCCESS) return r;
  const uint64_t base = (allocation + alignment - 1) & ~uint64_t{alignment - 1};
  {
    std::lock_guard lock(mu());
    ranges()[base] = Range{allocation, size, {}};
  }
  DeviceMemory::instance().add(base, size);
  *ptr = base;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  uint64_t allocation = 0;
  {
    std::lock_guard lock(mu());
    auto it = ranges().find(ptr);
    if (it == ranges().end() || it->second.size != size) return CUDA_ERROR_INVALID_VALUE;
    if (!it->second.maps.empty()) return CUDA_ERROR_INVALID_VALUE;  // unmap first, as CUDA asks
    allocation = it->second.allocation;
    ranges().erase(it);
  }
  DeviceMemory::instance().remove(ptr);
  return device_free(allocation);
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  if (!handle || size == 0 || size % kGranularity != 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (CUresult r = check_prop(prop); r != CUDA_SUCCESS) return r;
  auto* h = new Handle;
  h->size = size;
  h->prop = *prop;
  std::lock_guard lock(mu());
  handles()[h] = true;
  *handle = reinterpret_cast<uintptr_t>(h);
  return CUDA_SUCCESS;
}

// The last reference of a mapped handle goes when it is unmapped.
CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  std::lock_guard lock(mu());
  Handle* h = find_handle(handle);
  if (!h) return CUDA_ERROR_INVALID_VALUE;
  if (--h->refs == 0 && !h->mapped_at) destroy(h);
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  if (flags != 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  uint64_t restore = 0;
  size_t restore_size = 0;
  {
    std::lock_guard lock(mu());
    Handle* h = find_handle(handle);
    if (!h || h->refs == 0) return CUDA_ERROR_INVALID_VALUE;
    if (offset != 0 || size != h->size) return refuse("mapping part of a virtual memory allocation");
    if (h->mapped_at) return refuse("one virtual memory allocation mapped at two addresses");
    Range* r = range_of(ptr, size);
    if (!r || ptr % kGranularity != 0) return CUDA_ERROR_INVALID_VALUE;
    // No overlap with what is mapped there already.
    auto next = r->maps.lower_bound(ptr);
    if (next != r->maps.end() && next->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;
    if (next != r->maps.begin() && std::prev(next)->first + std::prev(next)->second->size > ptr)
      return CUDA_ERROR_INVALID_VALUE;
    r->maps[ptr] = h;
    h->mapped_at = ptr;
    restore = h->saved;
    restore_size = h->size;
    h->saved = 0;
  }
  if (restore) {  // the bytes it held when it was last unmapped
    const CUresult r = ops::dtod(ptr, restore, restore_size, nullptr, true);
    (void)device_free(restore);
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  std::map<uint64_t, Handle*> leaving;
  {
    std::lock_guard lock(mu());
    Range* r = range_of(ptr, size);
    if (!r) return CUDA_ERROR_INVALID_VALUE;
    // Whole mappings only, and the range must hold nothing else unmapped.
    uint64_t at = ptr;
    for (auto it = r->maps.lower_bound(ptr); it != r->maps.end() && it->first < ptr + size; ++it) {
      if (it->first != at) return CUDA_ERROR_INVALID_VALUE;
      at += it->second->size;
      leaving.insert(*it);
    }
    if (at != ptr + size) return CUDA_ERROR_INVALID_VALUE;
    for (const auto& [address, h] : leaving) r->maps.erase(address);
  }
  CUresult result = CUDA_SUCCESS;
  for (const auto& [address, h] : leaving) {
    // A handle still referenced keeps its bytes for its next map.
    bool keep = false;
    {
      std::lock_guard lock(mu());
      keep = h->refs > 0;
    }
    uint64_t saved = 0;
    if (keep && device_alloc(h->size, &saved) == CUDA_SUCCESS) {
      if (CUresult r = ops::dtod(saved, address, h->size, nullptr, true); r != CUDA_SUCCESS) result = r;
    }
    std::lock_guard lock(mu());
    h->mapped_at = 0;
    h->saved = saved;
    if (h->refs == 0) destroy(h);
  }
  return result;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (!desc || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (desc[i].location.id != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return refuse("read-only or revoked access to virtual memory (only read-write is kept)");
    }
  }
  std::lock_guard lock(mu());
  Range* r = range_of(ptr, size);
  if (!r) return CUDA_ERROR_INVALID_VALUE;
  // Every byte of [ptr, ptr + size) must be mapped.
  uint64_t at = ptr;
  auto it = r->maps.upper_bound(ptr);
  if (it != r->maps.begin()) --it;
  for (; it != r->maps.end() && at < ptr + size; ++it) {
    if (it->first > at) break;
    at = std::max<uint64_t>(at, it->first + it->second->size);
  }
  return at >= ptr + size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  if (!flags || !location) return CUDA_ERROR_INVALID_VALUE;
  if (location->type != CU_MEM_LOCATION_TYPE_DEVICE || location->id != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard lock(mu());
  Range* r = range_of(ptr, 1);
  if (!r) return CUDA_ERROR_INVALID_VALUE;
  auto it = r->maps.upper_bound(ptr);
  const bool mapped = it != r->maps.begin() && ptr < std::prev(it)->first + std::prev(it)->second->size;
  *flags = mapped ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  const auto p = reinterpret_cast<uintptr_t>(addr);
  std::lock_guard lock(mu());
  Range* r = range_of(p, 1);
  if (!r) return CUDA_ERROR_INVALID_VALUE;
  auto it = r->maps.upper_bound(p);
  if (it == r->maps.begin() || p >= std::prev(it)->first + std::prev(it)->second->size)
    return CUDA_ERROR_INVALID_VALUE;
  Handle* h = std::prev(it)->second;
  ++h->refs;
  *handle = reinterpret_cast<uintptr_t>(h);
  return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                CUmemGenericAllocationHandle handle) {
  if (!prop) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu());
  Handle* h = find_handle(handle);
  if (!h) return CUDA_ERROR_INVALID_VALUE;
  *prop = h->prop;
  return CUDA_SUCCESS;
}

}  // extern "C"
