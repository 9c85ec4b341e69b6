// FAKE CUDA DRIVER, for tests only (see fake_cuda.h): device memory (host
// memory the fake hands out), registered host memory, copies and memsets
// (done at once, timed on the modeled copy engine), texture objects, the
// device heap's limit.
#include <algorithm>
#include <cstring>

#include "fake_internal.h"

namespace vgpu::test::fake_cuda::api {

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
  if (!s.registered.erase(reinterpret_cast<uintptr_t>(p)))
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
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
  if (!c || c->WidthInBytes == 0 || c->Height == 0)
    return c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (c->srcPitch < c->WidthInBytes || c->dstPitch < c->WidthInBytes)
    return CUDA_ERROR_INVALID_VALUE;
  auto side = [&](CUmemorytype type, const void* host, CUdeviceptr device, size_t x, size_t y,
                  size_t pitch, uintptr_t* out) {
    const size_t span = (c->Height - 1) * pitch + c->WidthInBytes;
    const uintptr_t base =
        (type == CU_MEMORYTYPE_HOST ? reinterpret_cast<uintptr_t>(host) : device) + y * pitch + x;
    *out = base;
    if (type == CU_MEMORYTYPE_HOST) return host != nullptr;
    return type == CU_MEMORYTYPE_DEVICE && device_range(s, base, span);
  };
  uintptr_t dst = 0, src = 0;
  if (!side(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, c->dstPitch,
            &dst) ||
      !side(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY, c->srcPitch,
            &src)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t y = 0; y < c->Height; ++y) {
    std::memmove(reinterpret_cast<void*>(dst + y * c->dstPitch),
                 reinterpret_cast<const void*>(src + y * c->srcPitch), c->WidthInBytes);
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

// Texture objects over device memory the fake gave out (pitch2D and linear
// resources, as the backend makes them).
CUresult cuTexObjectCreate(CUtexObject* out, const CUDA_RESOURCE_DESC* res,
                           const CUDA_TEXTURE_DESC* tex, const CUDA_RESOURCE_VIEW_DESC* view) {
  FAKE_GUARD
  if (!out || !res || !tex || view) return CUDA_ERROR_INVALID_VALUE;
  if (res->resType == CU_RESOURCE_TYPE_PITCH2D) {
    const auto& p = res->res.pitch2D;
    if (p.pitchInBytes % 32 != 0 || !device_range(s, p.devPtr, p.pitchInBytes * p.height))
      return CUDA_ERROR_INVALID_VALUE;
  } else if (res->resType == CU_RESOURCE_TYPE_LINEAR) {
    if (!device_range(s, res->res.linear.devPtr, res->res.linear.sizeInBytes))
      return CUDA_ERROR_INVALID_VALUE;
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

}  // namespace vgpu::test::fake_cuda::api
