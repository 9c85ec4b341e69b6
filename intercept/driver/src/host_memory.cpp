// Page-locked host memory and pointer queries. Pinned memory lives in the
// data area (Connection::pin), so copies from and to it need no staging
// copy; what does not fit there is ordinary page-aligned memory, copied
// through staging. Registered memory is accepted as the hint it is: copies of
// it are staged like pageable ones.
//
// Mapped pinned memory (cuMemHostAlloc with DEVICEMAP) is managed memory
// underneath (managed_memory.h): kernels reach it at the host pointer, what
// the CPU wrote is there at each launch, and what kernels wrote is there for
// the CPU after it synchronises. Existing memory registered as mapped is
// mirrored by device memory at another address, kept coherent the same way
// (managed::register_host). A kernel given a pinned block's host pointer
// itself, as unified addressing allows, gets that block's device address
// instead (map_host_pointers).
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "device_memory.h"
#include "context_objects.h"
#include "driver_state.h"
#include "managed_memory.h"
#include "log.h"

using namespace vgpu;
using namespace vgpu::driver;
using intercept::DeviceMemory;

namespace {

std::mutex& host_mutex() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::map<const void*, HostRange>& ranges() {  // by base address
  static auto* m = new std::map<const void*, HostRange>;  // leaked: used until exit
  return *m;
}
// Ranges whose host pointer is not their device address (see
// map_host_pointers): all but those allocated mapped (managed memory
// underneath, at the same address). A launch looks at its parameters only while some exist.
std::atomic<int> indirect_ranges{0};
bool indirect(const HostRange& r) { return !(r.mapped && r.device == 0); }

void insert_range(const void* base, const HostRange& r) {
  if (ranges().insert_or_assign(base, r).second && indirect(r))
    indirect_ranges.fetch_add(1, std::memory_order_relaxed);
}
void erase_range(std::map<const void*, HostRange>::iterator it) {
  if (indirect(it->second)) indirect_ranges.fetch_sub(1, std::memory_order_relaxed);
  ranges().erase(it);
}

CUresult host_alloc(void** ptr, size_t size, unsigned flags) {
  if (!ptr) return CUDA_ERROR_INVALID_VALUE;
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (size == 0) size = 1;
  if (flags & CU_MEMHOSTALLOC_DEVICEMAP) {
    if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
    CUdeviceptr p = 0;
    if (CUresult r = managed::allocate(size, &p, true); r != CUDA_SUCCESS) return r;
    *ptr = reinterpret_cast<void*>(p);
    std::lock_guard lock(host_mutex());
    insert_range(*ptr, HostRange{size, flags, true, true});
    return CUDA_SUCCESS;
  }
  bool pinned = false;
  {
    Connection& c = Connection::instance();
    Connection::Lock lock(c);
    const Status s = c.pin(size, ptr);
    if (ok(s)) pinned = true;
    else if (s != Status::kMemoryAllocation) return to_cu(s);
  }
  if (!pinned) {
    intercept::log_once("pinned-full",
                        "pinned host memory past what this process's data area holds is ordinary "
                        "memory: copies from and to it are staged");
    if (posix_memalign(ptr, 4096, size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::lock_guard lock(host_mutex());
  insert_range(*ptr, HostRange{size, flags, true});
  return CUDA_SUCCESS;
}

}  // namespace

namespace vgpu::driver {

bool host_range(const void* p, const void** base, HostRange* out) {
  std::lock_guard lock(host_mutex());
  auto it = ranges().upper_bound(p);
  if (it == ranges().begin()) return false;
  --it;
  const auto offset = static_cast<uint64_t>(static_cast<const uint8_t*>(p) -
                                            static_cast<const uint8_t*>(it->first));
  if (offset >= it->second.size) return false;
  *base = it->first;
  *out = it->second;
  return true;
}

CUresult map_host_pointers(uint8_t* params, size_t size, const char* kernel) {
  if (indirect_ranges.load(std::memory_order_relaxed) == 0) return CUDA_SUCCESS;
  for (size_t off = 0; off + sizeof(uint64_t) <= size; off += sizeof(uint64_t)) {
    uint64_t word = 0;
    std::memcpy(&word, params + off, sizeof word);
    const void* base = nullptr;
    HostRange r;
    if (word < 4096 || !host_range(reinterpret_cast<const void*>(word), &base, &r) || !indirect(r)) continue;
    CUdeviceptr device = 0;
    if (CUresult e = cuMemHostGetDevicePointer_v2(&device, reinterpret_cast<void*>(word), 0); e != CUDA_SUCCESS)
      return e;
    std::memcpy(params + off, &device, sizeof device);
    intercept::log_once("host-pointer-in-kernel",
                        "kernel %s is given a pointer to page-locked host memory (zero-copy): vgpu "
                        "mirrors that memory in device memory, coherent at each launch and "
                        "synchronisation; pointers a kernel reads from memory are not translated",
                        kernel);
  }
  return CUDA_SUCCESS;
}

}  // namespace vgpu::driver

extern "C" {

CUresult cuMemHostAlloc(void** ptr, size_t size, unsigned flags) {
  if (CUresult r = host_alloc(ptr, size, flags); r != CUDA_SUCCESS) return r;
  owned::add(owned::Kind::kHostMemory, *ptr);
  return CUDA_SUCCESS;
}

CUresult cuMemAllocHost_v2(void** ptr, size_t size) { return cuMemHostAlloc(ptr, size, 0); }

CUresult cuMemFreeHost(void* ptr) {
  {
    std::lock_guard lock(host_mutex());
    auto it = ranges().find(ptr);
    if (it == ranges().end() || !it->second.allocated) return CUDA_ERROR_INVALID_VALUE;
    const bool managed_underneath = it->second.mapped && it->second.device == 0;
    const bool device_copy = it->second.device != 0;  // mapped when its device pointer was asked
    erase_range(it);
    owned::remove(owned::Kind::kHostMemory, ptr);
    if (managed_underneath) return managed::release(reinterpret_cast<CUdeviceptr>(ptr));
    if (device_copy) (void)managed::unregister_host(ptr);
  }
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  bool was_pinned = false;
  const Status s = c.unpin(ptr, &was_pinned);
  if (was_pinned) return to_cu(s);
  std::free(ptr);
  return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2(void* ptr, size_t size, unsigned flags) {
  if (!ptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (flags & CU_MEMHOSTREGISTER_IOMEMORY)
    return refuse("cuMemHostRegister with IOMEMORY (a device's I/O memory)");
  const bool mapped = flags & CU_MEMHOSTREGISTER_DEVICEMAP;
  if (mapped && (flags & CU_MEMHOSTREGISTER_READ_ONLY))
    return refuse("cuMemHostRegister with DEVICEMAP and READ_ONLY (read-only mapped host memory)");
  {
    std::lock_guard lock(host_mutex());
    if (ranges().count(ptr)) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  CUdeviceptr device = 0;
  if (mapped) {
    if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
    if (CUresult r = managed::register_host(ptr, size, &device); r != CUDA_SUCCESS) return r;
  }
  std::lock_guard lock(host_mutex());
  auto [it, inserted] = ranges().emplace(ptr, HostRange{size, flags, false, mapped, device});
  if (inserted) indirect_ranges.fetch_add(1, std::memory_order_relaxed);
  if (!inserted) {  // another thread registered it meanwhile
    if (mapped) (void)managed::unregister_host(ptr);
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  owned::add(owned::Kind::kHostRegistered, ptr);
  return CUDA_SUCCESS;
}

CUresult cuMemHostRegister(void* ptr, size_t size, unsigned flags) {
  return cuMemHostRegister_v2(ptr, size, flags);
}

CUresult cuMemHostUnregister(void* ptr) {
  bool mapped = false;
  {
    std::lock_guard lock(host_mutex());
    auto it = ranges().find(ptr);
    if (it == ranges().end() || it->second.allocated) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    mapped = it->second.mapped;
    erase_range(it);
    owned::remove(owned::Kind::kHostRegistered, ptr);
  }
  // The device's bytes come back first: what kernels wrote is the program's.
  return mapped ? managed::unregister_host(ptr) : CUDA_SUCCESS;
}

CUresult cuMemHostGetFlags(unsigned* flags, void* ptr) {
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  const void* base = nullptr;
  HostRange r;
  if (!host_range(ptr, &base, &r)) return CUDA_ERROR_INVALID_VALUE;
  *flags = r.flags;
  return CUDA_SUCCESS;
}

// Mapped memory's device address: its host address when allocated mapped
// (unified addressing), its device copy's when registered. Pinned memory made
// without the flag is mapped too on a device with unified addressing, as CUDA
// documents: it gets its device copy (as registered memory does) the first
// time its device pointer is asked for.
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* dptr, void* p, unsigned flags) {
  if (!dptr || !p || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const void* base = nullptr;
  HostRange r;
  if (!host_range(p, &base, &r)) return CUDA_ERROR_INVALID_VALUE;  // not pinned memory
  if (!r.mapped) {
    if (CUresult e = need_context(); e != CUDA_SUCCESS) return e;
    CUdeviceptr device = 0;
    const CUresult e = managed::register_host(const_cast<void*>(base), r.size, &device);
    if (e == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
      // Another thread asked at the same time: its device copy serves.
      if (!host_range(p, &base, &r) || !r.mapped) return e;
    } else if (e != CUDA_SUCCESS) {
      return e;
    } else {
      std::lock_guard lock(host_mutex());
      auto it = ranges().find(base);
      if (it == ranges().end()) {  // freed meanwhile
        (void)managed::unregister_host(const_cast<void*>(base));
        return CUDA_ERROR_INVALID_VALUE;
      }
      it->second.mapped = true;
      it->second.device = device;
      r = it->second;
    }
  }
  const uint64_t offset = static_cast<const uint8_t*>(p) - static_cast<const uint8_t*>(base);
  *dptr = r.device != 0 ? r.device + offset : reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

// ---- pointer attributes ---------------------------------------------------------------

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attr, CUdeviceptr ptr) {
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  uint64_t base = 0, size = 0;
  const bool device = DeviceMemory::instance().find(ptr, &base, &size);
  const void* hbase = nullptr;
  HostRange host;
  const bool pinned = !device && host_range(reinterpret_cast<const void*>(ptr), &hbase, &host);
  if (!device && !pinned) return CUDA_ERROR_INVALID_VALUE;  // not memory CUDA knows
  if (pinned) {
    base = reinterpret_cast<uint64_t>(hbase);
    size = host.size;
  }
  // Managed memory is device memory the CPU reaches at the same address;
  // mapped pinned memory is that too, but host memory to the program, and so
  // is registered memory's device copy (at another address than the CPU's).
  uint64_t registered_cpu = 0;
  const bool registered_copy = device && managed::registered_device(ptr, 1, &registered_cpu);
  const bool mapped = device && (registered_copy || managed::host_mapped(ptr));
  const bool is_managed = device && !mapped && managed::contains(ptr);
  // The device address of registered mapped memory's CPU address.
  const uint64_t registered_device = pinned && host.device != 0 ? host.device + (ptr - base) : 0;
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = reinterpret_cast<CUcontext>(primary_context(0));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = device && !mapped ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      if (registered_device) {
        *static_cast<CUdeviceptr*>(data) = registered_device;
        return CUDA_SUCCESS;
      }
      if (!device) return CUDA_ERROR_INVALID_VALUE;  // host memory is not mapped
      *static_cast<CUdeviceptr*>(data) = ptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (device && !is_managed && !mapped) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<void**>(data) = reinterpret_cast<void*>(registered_copy ? registered_cpu : ptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<int*>(data) = is_managed ? 1 : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<int*>(data) =
          attr == CU_POINTER_ATTRIBUTE_MAPPED && (device || registered_device) ? 1 : 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      *static_cast<int*>(data) = 1;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      // Unique while the allocation lives: its base address.
      *static_cast<unsigned long long*>(data) = base;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = base;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = size;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      *static_cast<unsigned long long*>(data) = 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      *static_cast<void**>(data) = nullptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      *static_cast<unsigned*>(data) = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// Several at once; for memory CUDA does not know, the documented "unregistered
// host memory" answers instead of an error.
CUresult cuPointerGetAttributes(unsigned n, CUpointer_attribute* attrs, void** data, CUdeviceptr ptr) {
  if (!attrs || !data) return CUDA_ERROR_INVALID_VALUE;
  const void* hbase = nullptr;
  HostRange host;
  const bool known = DeviceMemory::instance().contains(ptr) ||
                     host_range(reinterpret_cast<const void*>(ptr), &hbase, &host);
  for (unsigned i = 0; i < n; ++i) {
    if (!data[i]) continue;
    if (known && cuPointerGetAttribute(data[i], attrs[i], ptr) == CUDA_SUCCESS) continue;
    switch (attrs[i]) {  // unknown memory, or an attribute that does not apply
      case CU_POINTER_ATTRIBUTE_CONTEXT: *static_cast<CUcontext*>(data[i]) = nullptr; break;
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *static_cast<unsigned*>(data[i]) = 0; break;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data[i]) = -2; break;
      case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr*>(data[i]) = 0; break;
      case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *static_cast<void**>(data[i]) = nullptr; break;
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t*>(data[i]) = 0; break;
      case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *static_cast<unsigned long long*>(data[i]) = 0;
        break;
      default: *static_cast<int*>(data[i]) = 0; break;
    }
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
