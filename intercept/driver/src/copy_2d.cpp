// Two- and three-dimensional copies and memsets of linear memory (pitched
// device memory, host buffers) and CUDA arrays (dense rows of device memory,
// arrays.h), as rows: one copy when both sides are contiguous, else runs of
// rows (ops::rows), queued in stream order; a synchronous call waits on its
// last run.
#include <cstring>

#include "arrays.h"
#include "device_memory.h"
#include "driver_state.h"
#include "memory_ops.h"
#include "stream_capture.h"

using namespace vgpu;
using namespace vgpu::driver;

namespace {

// One side of a copy: where row (y, z) of the region starts is
// base + ((z0 + z) * slice_rows + y0 + y) * pitch + x0.
struct Side {
  bool device = false;
  uint64_t base = 0;
  size_t pitch = 0;
  size_t slice_rows = 0;  // rows per slice (3D); unused in 2D
  size_t x0 = 0, y0 = 0, z0 = 0;
  const arrays::Array* array = nullptr;  // a CUDA array: the region must lie inside it

  uint64_t row(size_t y, size_t z) const {
    return base + ((z0 + z) * slice_rows + y0 + y) * pitch + x0;
  }
};

CUresult side_of(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array, Side* out) {
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      if (!host) return CUDA_ERROR_INVALID_VALUE;
      out->base = reinterpret_cast<uint64_t>(host);
      return CUDA_SUCCESS;
    case CU_MEMORYTYPE_DEVICE:
      if (!device) return CUDA_ERROR_INVALID_VALUE;
      out->device = true;
      out->base = device;
      return CUDA_SUCCESS;
    case CU_MEMORYTYPE_UNIFIED:  // where it lives decides
      if (!device) return CUDA_ERROR_INVALID_VALUE;
      out->device = intercept::DeviceMemory::instance().contains(device);
      out->base = device;
      return CUDA_SUCCESS;
    case CU_MEMORYTYPE_ARRAY:
      out->array = arrays::find(array);
      if (!out->array) return CUDA_ERROR_INVALID_VALUE;
      out->device = true;
      out->base = out->array->dptr;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult copy_run(const Side& dst, uint64_t d, const Side& src, uint64_t s, size_t n,
                  CUstream stream, bool sync) {
  if (dst.device && src.device) return ops::dtod(d, s, n, stream, sync);
  if (dst.device) return ops::htod(d, reinterpret_cast<const void*>(s), n, stream, sync);
  if (src.device) return ops::dtoh(reinterpret_cast<void*>(d), s, n, stream, sync);
  return ops::any(d, s, n, stream, sync);  // host to host, in stream order
}

// `width` bytes of `height` rows of `depth` slices.
CUresult copy_region(const Side& dst, const Side& src, size_t width, size_t height, size_t depth,
                     CUstream stream, bool sync) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (width == 0 || height == 0 || depth == 0) return CUDA_SUCCESS;
  for (const Side* s : {&dst, &src}) {
    const arrays::Array* a = s->array;
    if (a && (s->x0 + width > a->row_bytes() || s->y0 + height > a->rows() || s->z0 + depth > a->slices()))
      return CUDA_ERROR_INVALID_VALUE;
  }
  const bool rows = height > 1 || depth > 1;
  if (rows && (dst.pitch < width + dst.x0 || src.pitch < width + src.x0)) return CUDA_ERROR_INVALID_VALUE;
  if (depth > 1 && (dst.slice_rows < height + dst.y0 || src.slice_rows < height + src.y0))
    return CUDA_ERROR_INVALID_VALUE;
  // Rows back to back on both sides (and slices too): one copy.
  auto packed = [&](const Side& s) {
    return !rows || (s.pitch == width && (depth == 1 || s.slice_rows == height));
  };
  if (packed(dst) && packed(src))
    return copy_run(dst, dst.row(0, 0), src, src.row(0, 0), width * height * depth, stream, sync);
  if (dst.device || src.device) {
    // Slices back to back on both sides are one run of rows; else one run a slice.
    const bool slab = depth == 1 || (dst.slice_rows == height && src.slice_rows == height);
    const size_t runs = slab ? 1 : depth;
    for (size_t z = 0; z < runs; ++z) {
      ops::RowCopy run{dst.device, src.device, dst.row(0, z), dst.pitch, src.row(0, z), src.pitch,
                       width, slab ? height * depth : height};
      if (CUresult r = ops::rows(run, stream, sync && z == runs - 1); r != CUDA_SUCCESS) return r;
    }
    return CUDA_SUCCESS;
  }
  for (size_t z = 0; z < depth; ++z) {  // host to host, row by row
    for (size_t y = 0; y < height; ++y) {
      const bool last = z == depth - 1 && y == height - 1;
      if (CUresult r = copy_run(dst, dst.row(y, z), src, src.row(y, z), width, stream, sync && last);
          r != CUDA_SUCCESS)
        return r;
    }
  }
  return CUDA_SUCCESS;
}

// The 3D description of a 2D copy (one slice).
CUDA_MEMCPY3D as_3d(const CUDA_MEMCPY2D& p) {
  CUDA_MEMCPY3D c{};
  c.srcXInBytes = p.srcXInBytes;
  c.srcY = p.srcY;
  c.srcMemoryType = p.srcMemoryType;
  c.srcHost = p.srcHost;
  c.srcDevice = p.srcDevice;
  c.srcArray = p.srcArray;
  c.srcPitch = p.srcPitch;
  c.srcHeight = p.Height;
  c.dstXInBytes = p.dstXInBytes;
  c.dstY = p.dstY;
  c.dstMemoryType = p.dstMemoryType;
  c.dstHost = p.dstHost;
  c.dstDevice = p.dstDevice;
  c.dstArray = p.dstArray;
  c.dstPitch = p.dstPitch;
  c.dstHeight = p.Height;
  c.WidthInBytes = p.WidthInBytes;
  c.Height = p.Height;
  c.Depth = 1;
  return c;
}

bool captured(CUstream stream, bool sync) {
  return !sync && capture::active.load(std::memory_order_relaxed) > 0 && capture::capturing(stream);
}

CUresult capture_copy(const CUDA_MEMCPY3D& c, CUstream stream) {
  graph::Node node;
  node.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  node.copy = c;
  return capture::add(stream, std::move(node));
}

CUresult copy_3d(const CUDA_MEMCPY3D* p, CUstream stream, bool sync) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (captured(stream, sync)) return capture_copy(*p, stream);
  if (p->srcLOD != 0 || p->dstLOD != 0) return refuse("mipmapped arrays (a 3D copy with a level of detail)");
  Side src, dst;
  if (CUresult r = side_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, &src); r != CUDA_SUCCESS) return r;
  if (CUresult r = side_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, &dst); r != CUDA_SUCCESS) return r;
  // An array's own layout; what the copy says of pitch and height is for linear memory.
  src.pitch = src.array ? src.array->pitch() : p->srcPitch;
  src.slice_rows = src.array ? src.array->rows() : p->srcHeight;
  src.x0 = p->srcXInBytes;
  src.y0 = p->srcY;
  src.z0 = p->srcZ;
  dst.pitch = dst.array ? dst.array->pitch() : p->dstPitch;
  dst.slice_rows = dst.array ? dst.array->rows() : p->dstHeight;
  dst.x0 = p->dstXInBytes;
  dst.y0 = p->dstY;
  dst.z0 = p->dstZ;
  return copy_region(dst, src, p->WidthInBytes, p->Height, p->Depth, stream, sync);
}

// A peer copy between the contexts of a VM's one device: a 3D copy (every
// context of the process shares its one session on the host).
CUresult copy_3d_peer(const CUDA_MEMCPY3D_PEER* p, CUstream stream, bool sync) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  CUDA_MEMCPY3D c{};
  c.srcXInBytes = p->srcXInBytes;
  c.srcY = p->srcY;
  c.srcZ = p->srcZ;
  c.srcLOD = p->srcLOD;
  c.srcMemoryType = p->srcMemoryType;
  c.srcHost = p->srcHost;
  c.srcDevice = p->srcDevice;
  c.srcArray = p->srcArray;
  c.srcPitch = p->srcPitch;
  c.srcHeight = p->srcHeight;
  c.dstXInBytes = p->dstXInBytes;
  c.dstY = p->dstY;
  c.dstZ = p->dstZ;
  c.dstLOD = p->dstLOD;
  c.dstMemoryType = p->dstMemoryType;
  c.dstHost = p->dstHost;
  c.dstDevice = p->dstDevice;
  c.dstArray = p->dstArray;
  c.dstPitch = p->dstPitch;
  c.dstHeight = p->dstHeight;
  c.WidthInBytes = p->WidthInBytes;
  c.Height = p->Height;
  c.Depth = p->Depth;
  return copy_3d(&c, stream, sync);
}

// A 2D copy is a 3D copy of one slice.
CUresult copy_2d(const CUDA_MEMCPY2D* p, CUstream stream, bool sync) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_MEMCPY3D c = as_3d(*p);
  return copy_3d(&c, stream, sync);
}

// `width` elements of `height` rows, `pitch` bytes apart.
CUresult memset_2d(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elem, size_t width,
                   size_t height, CUstream stream, bool sync) {
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  if (captured(stream, sync)) {
    graph::Node node;
    node.type = CU_GRAPH_NODE_TYPE_MEMSET;
    node.memset = {dst, pitch, value, elem, width, height};
    return capture::add(stream, std::move(node));
  }
  const size_t row_bytes = width * elem;
  if (height > 1 && pitch < row_bytes) return CUDA_ERROR_INVALID_VALUE;
  if (height == 1 || pitch == row_bytes)
    return ops::memset_elements(dst, value, elem, width * height, stream, sync);
  // The first row set, then copied to the others (a source pitch of 0 repeats it).
  if (CUresult r = ops::memset_elements(dst, value, elem, width, stream, false); r != CUDA_SUCCESS)
    return r;
  return ops::rows({true, true, dst + pitch, pitch, dst, 0, row_bytes, height - 1}, stream, sync);
}

}  // namespace

extern "C" {

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* p) { return copy_2d(p, nullptr, true); }
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* p) { return copy_2d(p, nullptr, true); }
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* p, CUstream s) { return copy_2d(p, s, false); }
CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D* p) { return copy_3d(p, nullptr, true); }
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* p, CUstream s) { return copy_3d(p, s, false); }
CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER* p) { return copy_3d_peer(p, nullptr, true); }
CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER* p, CUstream s) { return copy_3d_peer(p, s, false); }

CUresult cuMemsetD2D8_v2(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h) {
  return memset_2d(d, pitch, v, 1, w, h, nullptr, true);
}
CUresult cuMemsetD2D16_v2(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h) {
  return memset_2d(d, pitch, v, 2, w, h, nullptr, true);
}
CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h) {
  return memset_2d(d, pitch, v, 4, w, h, nullptr, true);
}
CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) {
  return memset_2d(d, pitch, v, 1, w, h, s, false);
}
CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) {
  return memset_2d(d, pitch, v, 2, w, h, s, false);
}
CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned v, size_t w, size_t h, CUstream s) {
  return memset_2d(d, pitch, v, 4, w, h, s, false);
}

}  // extern "C"
