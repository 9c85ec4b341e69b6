// The copy and memset operations the driver's entry points share (memory.cpp):
// each checks the context, routes managed memory as device memory, and
// returns once the work is queued (`sync` false) or done (`sync` true).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace vgpu::driver::ops {

CUresult htod(CUdeviceptr dst, const void* src, size_t n, CUstream stream, bool sync);
CUresult dtoh(void* dst, CUdeviceptr src, size_t n, CUstream stream, bool sync);
CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream, bool sync);
// The direction from where the pointers live (unified addressing).
CUresult any(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream, bool sync);
// `height` rows of `width` bytes, each side's rows its pitch apart, between
// sides `dst_device` and `src_device` say are device memory (host to host is
// the caller's): as few requests as the data area allows. Managed memory or
// registered mapped memory on a side: row by row, as the copies above.
struct RowCopy {
  bool dst_device = false, src_device = false;
  uint64_t dst = 0, dst_pitch = 0, src = 0, src_pitch = 0;
  size_t width = 0, height = 0;
};
CUresult rows(const RowCopy& copy, CUstream stream, bool sync);
// `count` elements of `width` (1, 2 or 4) bytes set to `value`.
CUresult memset_elements(CUdeviceptr dst, uint32_t value, unsigned width, size_t count,
                         CUstream stream, bool sync);

// One allocation of device memory from vgpud, and its free, with no
// bookkeeping of the caller's (arrays, virtual memory keep their own).
CUresult device_alloc(size_t bytes, uint64_t* dptr);
CUresult device_free(uint64_t dptr);

}  // namespace vgpu::driver::ops
