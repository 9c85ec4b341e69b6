// Device and pinned-host memory, copies and memsets.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "api.h"
#include "copy.h"
#include "device_memory.h"
#include "log.h"

using namespace vgpu;
using namespace vgpu::intercept;

namespace {

uint64_t dev(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Resolves cudaMemcpyDefault from where the pointers live.
cudaMemcpyKind infer_kind(const void* dst, const void* src) {
  const bool d = DeviceMemory::instance().contains(dev(dst));
  const bool s = DeviceMemory::instance().contains(dev(src));
  if (d && s) return cudaMemcpyDeviceToDevice;
  if (d) return cudaMemcpyHostToDevice;
  if (s) return cudaMemcpyDeviceToHost;
  return cudaMemcpyHostToHost;
}

Status memcpy_any(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                  cudaStream_t stream, bool sync) {
  if (count == 0) return Status::kSuccess;
  if (!dst || !src) return Status::kInvalidValue;
  if (kind == cudaMemcpyDefault) kind = infer_kind(dst, src);
  if (kind == cudaMemcpyHostToHost) {
    std::memmove(dst, src, count);
    return Status::kSuccess;
  }
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  const uint64_t s = stream_handle(stream);
  switch (kind) {
    case cudaMemcpyHostToDevice: return copy_to_device(c, dev(dst), src, count, s, sync);
    case cudaMemcpyDeviceToHost: return copy_from_device(c, dst, dev(src), count, s, sync);
    case cudaMemcpyDeviceToDevice: return copy_on_device(c, dev(dst), dev(src), count, s, sync);
    default: return Status::kInvalidMemcpyDirection;
  }
}

// Pinned host memory lives in the data area (Connection::pin), so copies from
// and to it need no staging copy. What does not fit there is ordinary
// page-aligned memory, whose copies are staged like pageable ones.
std::mutex host_mu;
std::unordered_set<void*>& host_allocations() {  // the ordinary ones
  static auto* s = new std::unordered_set<void*>;
  return *s;
}

cudaError_t host_alloc(void** ptr, size_t size) {
  if (!ptr) return result(Status::kInvalidValue);
  {
    Connection& c = Connection::instance();
    Connection::Lock lock(c);
    const Status s = c.pin(size, ptr);
    if (ok(s)) return cudaSuccess;
    if (s != Status::kMemoryAllocation) return result(s);  // no device, as with CUDA
  }
  log_once("pinned-full",
           "pinned host memory past what this process's data area holds is ordinary memory: "
           "copies from and to it are staged");
  void* p = nullptr;
  if (posix_memalign(&p, 4096, size ? size : 1) != 0) return result(Status::kMemoryAllocation);
  std::lock_guard lock(host_mu);
  host_allocations().insert(p);
  *ptr = p;
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (!devPtr) return result(Status::kInvalidValue);
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::MallocReply rep{};
  if (Status s = c.call(proto::MallocRequest{size}, {}, &rep); !ok(s)) return result(s);
  if (rep.dptr) DeviceMemory::instance().add(rep.dptr, size);
  *devPtr = reinterpret_cast<void*>(rep.dptr);
  return cudaSuccess;
}

cudaError_t cudaFree(void* devPtr) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::FreeReply rep{};
  const Status s = with_async_errors(c, c.call(proto::FreeRequest{dev(devPtr)}, {}, &rep));
  if (ok(s) && devPtr) DeviceMemory::instance().remove(dev(devPtr));
  return result(s);
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  if (!free || !total) return result(Status::kInvalidValue);
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::MemGetInfoReply rep{};
  if (Status s = c.call(proto::MemGetInfoRequest{}, {}, &rep); !ok(s)) return result(s);
  *free = rep.free;
  *total = rep.total;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return result(memcpy_any(dst, src, count, kind, nullptr, true));
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return result(memcpy_any(dst, src, count, kind, stream, false));
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  return result(set_on_device(c, dev(devPtr), value, count, 0, true));
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  return result(set_on_device(c, dev(devPtr), value, count, stream_handle(stream), false));
}

// Per-thread default stream variants: the host's default stream serves both.
cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return cudaMemcpy(dst, src, count, kind);
}
cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                                 cudaStream_t stream) {
  return cudaMemcpyAsync(dst, src, count, kind, stream);
}
cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  return cudaMemset(devPtr, value, count);
}
cudaError_t cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return cudaMemsetAsync(devPtr, value, count, stream);
}

cudaError_t cudaMallocHost(void** ptr, size_t size) { return host_alloc(ptr, size); }

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int) { return host_alloc(pHost, size); }

cudaError_t cudaFreeHost(void* ptr) {
  if (!ptr) return cudaSuccess;
  {
    Connection& c = Connection::instance();
    Connection::Lock lock(c);
    bool was_pinned = false;
    const Status s = c.unpin(ptr, &was_pinned);
    if (was_pinned) return result(s);
  }
  {
    std::lock_guard lock(host_mu);
    if (!host_allocations().erase(ptr)) return result(Status::kInvalidValue);
  }
  std::free(ptr);
  return cudaSuccess;
}

}  // extern "C"
