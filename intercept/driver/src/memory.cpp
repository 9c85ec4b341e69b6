// Device memory, copies and memsets. Bytes travel through the data area in
// pipelined chunks (intercept/src/copy.h); asynchronous forms return once the
// copy is queued, and a device-to-host copy's bytes land before the next
// synchronising call returns, as CUDA promises.
//
// Managed memory (managed_memory.h) is device memory to every copy: what the
// CPU wrote is flushed before a copy reads it, and what a copy writes is the
// device's afterwards, so its bytes never pass through the CPU's mapping here.
#include <cstring>

#include "copy.h"
#include "device_memory.h"
#include "device_output.h"
#include "context_objects.h"
#include "driver_state.h"
#include "managed_memory.h"
#include "memory_ops.h"
#include "stream_capture.h"
#include "vgpu/protocol/rows.h"

using namespace vgpu;
using namespace vgpu::driver;
using intercept::DeviceMemory;

namespace {

// Whether a copy or memset touching [p, p + n) involves managed memory; if
// so, the CPU's writes are flushed first, in the copy's stream.
CUresult flush_if_managed(uint64_t p, size_t n, CUstream stream, bool* managed_side = nullptr) {
  const bool m =
      managed::any() && (managed::contains(p, n) || managed::registered_device(p, n));
  if (managed_side) *managed_side = m;
  return m ? managed::flush(stream_handle(stream)) : CUDA_SUCCESS;
}

// A copy queued into a capturing stream becomes a memcpy node.
CUresult capture_copy(CUmemorytype dst_type, uint64_t dst, CUmemorytype src_type, uint64_t src,
                      size_t n, CUstream stream) {
  graph::Node node;
  node.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  CUDA_MEMCPY3D& c = node.copy;
  c.dstMemoryType = dst_type;
  c.srcMemoryType = src_type;
  if (dst_type == CU_MEMORYTYPE_HOST) c.dstHost = reinterpret_cast<void*>(dst);
  else c.dstDevice = dst;
  if (src_type == CU_MEMORYTYPE_HOST) c.srcHost = reinterpret_cast<const void*>(src);
  else c.srcDevice = src;
  c.WidthInBytes = n;
  c.Height = 1;
  c.Depth = 1;
  return capture::add(stream, std::move(node));
}

// Sends a copy (the connection lock held); a blocking one then flushes what
// kernels printed, as CUDA does at a blocking copy.
template <class Copy>
CUresult send_copy(bool sync, Copy copy) {
  CUresult r;
  {
    Connection& c = Connection::instance();
    Connection::Lock lock(c);
    r = to_cu(copy(c));
  }
  if (sync) {
    device_output::flush();
    managed::synchronized();
  }
  return r;
}

bool captured(CUstream stream, bool sync) {
  return !sync && capture::active.load(std::memory_order_relaxed) > 0 && capture::capturing(stream);
}

}  // namespace

namespace vgpu::driver::ops {

CUresult htod(CUdeviceptr dst, const void* src, size_t n, CUstream stream, bool sync) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (n == 0) return CUDA_SUCCESS;
  if (!src) return CUDA_ERROR_INVALID_VALUE;
  const auto host = reinterpret_cast<uint64_t>(src);
  if (captured(stream, sync)) return capture_copy(CU_MEMORYTYPE_DEVICE, dst, CU_MEMORYTYPE_UNIFIED, host, n, stream);
  if (managed::any()) {
    // Managed memory is device memory at the same address; registered mapped
    // memory's device copy is current at the copy's point in the stream.
    if (managed::contains(host, n)) return dtod(dst, host, n, stream, sync);
    if (uint64_t d = 0; managed::registered_host(host, n, &d)) return dtod(dst, d, n, stream, sync);
  }
  bool to_managed = false;
  if (CUresult r = flush_if_managed(dst, n, stream, &to_managed); r != CUDA_SUCCESS) return r;
  if (to_managed) managed::device_may_write(dst, n);
  return send_copy(sync, [&](Connection& c) { return intercept::copy_to_device(c, dst, src, n, stream_handle(stream), sync); });
}

CUresult dtoh(void* dst, CUdeviceptr src, size_t n, CUstream stream, bool sync) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (n == 0) return CUDA_SUCCESS;
  if (!dst) return CUDA_ERROR_INVALID_VALUE;
  const auto host = reinterpret_cast<uint64_t>(dst);
  if (captured(stream, sync)) return capture_copy(CU_MEMORYTYPE_UNIFIED, host, CU_MEMORYTYPE_DEVICE, src, n, stream);
  if (managed::any()) {
    if (managed::contains(host, n)) return dtod(host, src, n, stream, sync);
    if (uint64_t d = 0; managed::registered_host(host, n, &d)) return dtod(d, src, n, stream, sync);
  }
  if (CUresult r = flush_if_managed(src, n, stream); r != CUDA_SUCCESS) return r;
  return send_copy(sync, [&](Connection& c) { return intercept::copy_from_device(c, dst, src, n, stream_handle(stream), sync); });
}

CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream, bool sync) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (n == 0) return CUDA_SUCCESS;
  if (captured(stream, sync)) return capture_copy(CU_MEMORYTYPE_DEVICE, dst, CU_MEMORYTYPE_DEVICE, src, n, stream);
  bool to_managed = false;
  if (CUresult r = flush_if_managed(src, n, stream); r != CUDA_SUCCESS) return r;
  if (CUresult r = flush_if_managed(dst, n, stream, &to_managed); r != CUDA_SUCCESS) return r;
  if (to_managed) managed::device_may_write(dst, n);
  return send_copy(sync, [&](Connection& c) { return intercept::copy_on_device(c, dst, src, n, stream_handle(stream), sync); });
}

CUresult any(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream, bool sync) {
  const bool d = DeviceMemory::instance().contains(dst);
  const bool s = DeviceMemory::instance().contains(src);
  auto* hd = reinterpret_cast<void*>(dst);
  auto* hs = reinterpret_cast<const void*>(src);
  if (d && s) return dtod(dst, src, n, stream, sync);
  if (d) return htod(dst, hs, n, stream, sync);
  if (s) return dtoh(hd, src, n, stream, sync);
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (captured(stream, sync)) return capture_copy(CU_MEMORYTYPE_HOST, dst, CU_MEMORYTYPE_HOST, src, n, stream);
  if (sync) {
    // Host to host is ordered after the work already queued, as in CUDA.
    Connection& c = Connection::instance();
    Connection::Lock lock(c);
    proto::DeviceSynchronizeReply rep{};
    if (Status st = c.call(proto::DeviceSynchronizeRequest{}, {}, &rep); !ok(st)) return to_cu(st);
  }
  std::memmove(hd, hs, n);
  return CUDA_SUCCESS;
}

namespace {

// Whether a side of a rows copy is memory the plain copies treat specially.
bool managed_side(bool device, uint64_t p, uint64_t span) {
  uint64_t other = 0;
  return managed::contains(p, span) ||
         (device ? managed::registered_device(p, span) : managed::registered_host(p, span, &other));
}

}  // namespace

CUresult rows(const RowCopy& r, CUstream stream, bool sync) {
  if (CUresult res = need_context(); res != CUDA_SUCCESS) return res;
  if (r.width == 0 || r.height == 0) return CUDA_SUCCESS;
  uint64_t dst_span = 0, src_span = 0;
  if (!proto::rows_span(r.width, r.height, r.dst_pitch, &dst_span) ||
      !proto::rows_span(r.width, r.height, r.src_pitch, &src_span) || !r.dst || !r.src ||
      (!r.dst_device && !r.src_device)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (managed::any() &&
      (managed_side(r.dst_device, r.dst, dst_span) || managed_side(r.src_device, r.src, src_span))) {
    for (size_t y = 0; y < r.height; ++y) {
      const uint64_t d = r.dst + y * r.dst_pitch, s = r.src + y * r.src_pitch;
      const bool last = sync && y == r.height - 1;
      CUresult res = !r.src_device ? htod(d, reinterpret_cast<const void*>(s), r.width, stream, last)
                     : !r.dst_device ? dtoh(reinterpret_cast<void*>(d), s, r.width, stream, last)
                                     : dtod(d, s, r.width, stream, last);
      if (res != CUDA_SUCCESS) return res;
    }
    return CUDA_SUCCESS;
  }
  const intercept::Rows shape{r.width, r.height, r.dst_pitch, r.src_pitch};
  const uint64_t h = stream_handle(stream);
  return send_copy(sync, [&](Connection& c) {
    if (!r.src_device) return intercept::copy_rows_to_device(c, r.dst, reinterpret_cast<const void*>(r.src), shape, h, sync);
    if (!r.dst_device) return intercept::copy_rows_from_device(c, reinterpret_cast<void*>(r.dst), r.src, shape, h, sync);
    return intercept::copy_rows_on_device(c, r.dst, r.src, shape, h, sync);
  });
}

// A pattern whose bytes all agree is a byte memset on the host; another is
// written as a copy of the pattern, in stream order either way.
CUresult memset_elements(CUdeviceptr dst, uint32_t value, unsigned width, size_t count,
                         CUstream stream, bool sync) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (count == 0) return CUDA_SUCCESS;
  if (dst % width) return CUDA_ERROR_INVALID_VALUE;
  if (captured(stream, sync)) {
    graph::Node node;
    node.type = CU_GRAPH_NODE_TYPE_MEMSET;
    node.memset = {dst, count * width, value, width, count, 1};
    return capture::add(stream, std::move(node));
  }
  bool to_managed = false;
  if (CUresult r = flush_if_managed(dst, count * width, stream, &to_managed); r != CUDA_SUCCESS) return r;
  if (to_managed) managed::device_may_write(dst, count * width);
  uint8_t bytes[4];
  std::memcpy(bytes, &value, 4);
  bool uniform = true;
  for (unsigned i = 1; i < width; ++i) uniform &= bytes[i] == bytes[0];
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  if (uniform) {
    return to_cu(intercept::set_on_device(c, dst, bytes[0], count * width, stream_handle(stream), sync));
  }
  std::vector<uint8_t> pattern(count * width);
  for (size_t i = 0; i < count; ++i) std::memcpy(pattern.data() + i * width, bytes, width);
  // The copy is staged before this returns, so the buffer may go.
  return to_cu(intercept::copy_to_device(c, dst, pattern.data(), pattern.size(),
                                         stream_handle(stream), sync));
}

CUresult device_alloc(size_t bytes, uint64_t* dptr) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::MallocReply rep{};
  if (Status s = c.call(proto::MallocRequest{bytes}, {}, &rep); !ok(s)) return to_cu(s);
  *dptr = rep.dptr;
  return CUDA_SUCCESS;
}

CUresult device_free(uint64_t dptr) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::FreeReply rep{};
  return to_cu(intercept::with_async_errors(c, c.call(proto::FreeRequest{dptr}, {}, &rep)));
}

}  // namespace vgpu::driver::ops

using namespace vgpu::driver::ops;

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t size) {
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t p = 0;
  if (CUresult r = device_alloc(size, &p); r != CUDA_SUCCESS) return r;
  DeviceMemory::instance().add(p, size);
  owned::add(owned::Kind::kDeviceMemory, p);
  *dptr = p;
  return CUDA_SUCCESS;
}

// Rows padded to 512 bytes, the alignment CUDA devices report for pitches.
CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                            unsigned element) {
  if (!pitch || (element != 4 && element != 8 && element != 16) || width == 0 || height == 0)
    return CUDA_ERROR_INVALID_VALUE;
  const size_t p = (width + 511) & ~size_t{511};
  if (CUresult r = cuMemAlloc_v2(dptr, p * height); r != CUDA_SUCCESS) return r;
  *pitch = p;
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (dptr == 0) return CUDA_SUCCESS;
  if (CUresult r = managed::release(dptr); r != CUDA_ERROR_NOT_FOUND) {
    if (r == CUDA_SUCCESS) owned::remove(owned::Kind::kDeviceMemory, dptr);
    return r;
  }
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::FreeReply rep{};
  const Status s = intercept::with_async_errors(c, c.call(proto::FreeRequest{dptr}, {}, &rep));
  if (ok(s)) {
    DeviceMemory::instance().remove(dptr);
    owned::remove(owned::Kind::kDeviceMemory, dptr);
  }
  return to_cu(s);
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  proto::MemGetInfoReply rep{};
  if (Status s = c.call(proto::MemGetInfoRequest{}, {}, &rep); !ok(s)) return to_cu(s);
  if (free) *free = rep.free;
  if (total) *total = rep.total;
  return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr dptr) {
  uint64_t b = 0, s = 0;
  if (!DeviceMemory::instance().find(dptr, &b, &s)) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = b;
  if (size) *size = s;
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) { return htod(dst, src, n, nullptr, true); }
CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) { return dtoh(dst, src, n, nullptr, true); }
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) { return dtod(dst, src, n, nullptr, true); }
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) { return any(dst, src, n, nullptr, true); }

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  return htod(dst, src, n, s, false);
}
CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  return dtoh(dst, src, n, s, false);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return dtod(dst, src, n, s, false);
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return any(dst, src, n, s, false);
}

// One device per VM: a peer copy is a copy on that device.
CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext, CUdeviceptr src, CUcontext, size_t n) {
  return dtod(dst, src, n, nullptr, true);
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext, CUdeviceptr src, CUcontext, size_t n,
                           CUstream s) {
  return dtod(dst, src, n, s, false);
}

CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { return memset_elements(d, v, 1, n, nullptr, true); }
CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) { return memset_elements(d, v, 2, n, nullptr, true); }
CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) { return memset_elements(d, v, 4, n, nullptr, true); }
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) { return memset_elements(d, v, 1, n, s, false); }
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) { return memset_elements(d, v, 2, n, s, false); }
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s) { return memset_elements(d, v, 4, n, s, false); }

}  // extern "C"
