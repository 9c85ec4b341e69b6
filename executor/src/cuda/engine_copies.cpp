// The engine: copies between the guest's bytes (through the staging slots)
// and device memory, chunk by chunk, two chunks in flight; a copy of rows
// (a 2D copy) as one 2D driver copy per chunk's whole rows. The daemon's half
// is staging_transfer.cpp; the protocol is in staging_area.h. And copies
// straight between the registered data area and the device (copy_area).
#include "engine.h"

#include <algorithm>

namespace vgpu::executor::cuda {
namespace {

// The daemon stopped feeding or draining (it went away, or a bug): the copy
// cannot finish. An operating-system error is what the driver reports when
// something outside the GPU breaks.
constexpr CUresult kStagingBroken = CUDA_ERROR_OPERATING_SYSTEM;

// Pitches the driver's 2D copies take (CU_DEVICE_ATTRIBUTE_MAX_PITCH); a
// copy of rows past it, or repeating one source row, goes row by row.
constexpr uint64_t kMaxPitch = 0x7fffffff;

bool one_2d_copy(const wire::RowShape& rows) {
  return rows.dst_pitch <= kMaxPitch && rows.src_pitch <= kMaxPitch && rows.src_pitch >= rows.width &&
         rows.dst_pitch >= rows.width;
}

// cuMemcpy2DAsync's description of `height` rows.
CUDA_MEMCPY2D rows_2d(CUmemorytype dst_type, uint64_t dst, uint64_t dst_pitch, CUmemorytype src_type,
                      uint64_t src, uint64_t src_pitch, uint64_t width, uint64_t height) {
  CUDA_MEMCPY2D c{};
  c.dstMemoryType = dst_type;
  c.srcMemoryType = src_type;
  if (dst_type == CU_MEMORYTYPE_HOST) c.dstHost = reinterpret_cast<void*>(dst);
  else c.dstDevice = dst;
  if (src_type == CU_MEMORYTYPE_HOST) c.srcHost = reinterpret_cast<const void*>(src);
  else c.srcDevice = src;
  c.dstPitch = dst_pitch;
  c.srcPitch = src_pitch;
  c.WidthInBytes = width;
  c.Height = height;
  return c;
}

}  // namespace

CUresult Engine::queue_piece(bool to_device, uint64_t device, const wire::RowShape& rows,
                             uint64_t offset, uint8_t* host, uint64_t len) {
  auto plain = [&](uint64_t at, uint8_t* h, uint64_t n) {
    return to_device ? api_.cuMemcpyHtoDAsync(at, h, n, stream_) : api_.cuMemcpyDtoHAsync(h, at, n, stream_);
  };
  if (rows.width == 0) return plain(device + offset, host, len);
  const uint64_t pitch = to_device ? rows.dst_pitch : rows.src_pitch;
  const bool whole_2d = pitch <= kMaxPitch && rows.width <= kMaxPitch;
  // The chunk's bytes: a part of a row, whole rows, a part of a row.
  while (len > 0) {
    const uint64_t row = offset / rows.width, column = offset % rows.width;
    const uint64_t at = device + row * pitch + column;
    uint64_t n = std::min(rows.width - column, len);
    CUresult r;
    if (column == 0 && len >= 2 * rows.width && whole_2d) {
      const uint64_t height = len / rows.width;
      n = height * rows.width;
      const auto h = reinterpret_cast<uint64_t>(host);
      const CUDA_MEMCPY2D c = to_device
          ? rows_2d(CU_MEMORYTYPE_DEVICE, at, pitch, CU_MEMORYTYPE_HOST, h, rows.width, rows.width, height)
          : rows_2d(CU_MEMORYTYPE_HOST, h, rows.width, CU_MEMORYTYPE_DEVICE, at, pitch, rows.width, height);
      r = api_.cuMemcpy2DAsync(&c, stream_);
    } else {
      r = plain(at, host, n);
    }
    if (r != CUDA_SUCCESS) return r;
    offset += n;
    host += n;
    len -= n;
  }
  return CUDA_SUCCESS;
}

Timed Engine::copy_on_device(uint64_t dst, uint64_t src, uint64_t size, const wire::RowShape& rows) {
  return timed([&]() -> CUresult {
    if (rows.width == 0) return api_.cuMemcpyDtoDAsync(dst, src, size, stream_);
    if (size % rows.width != 0) return CUDA_ERROR_INVALID_VALUE;
    const uint64_t height = size / rows.width;
    if (one_2d_copy(rows)) {
      const CUDA_MEMCPY2D c = rows_2d(CU_MEMORYTYPE_DEVICE, dst, rows.dst_pitch, CU_MEMORYTYPE_DEVICE, src,
                                      rows.src_pitch, rows.width, height);
      return api_.cuMemcpy2DAsync(&c, stream_);
    }
    for (uint64_t y = 0; y < height; ++y) {
      if (CUresult r = api_.cuMemcpyDtoDAsync(dst + y * rows.dst_pitch, src + y * rows.src_pitch,
                                              rows.width, stream_);
          r != CUDA_SUCCESS) {
        return r;
      }
    }
    return CUDA_SUCCESS;
  });
}

Timed Engine::copy_in(uint64_t dst, uint64_t size, const wire::RowShape& rows, uint64_t deadline_ns,
                      const std::function<bool()>& stop) {
  if (!staging_ || size == 0) return {CUDA_ERROR_INVALID_VALUE, 0};
  StagingArea& s = *staging_;
  const uint32_t n = s.chunks(size);
  return timed([&]() -> CUresult {
    for (uint32_t k = 0; k < n; ++k) {
      if (s.wait_filled(k + 1, deadline_ns, stop) != StagingArea::Wait::kReady) {
        return kStagingBroken;
      }
      const uint64_t offset = uint64_t{k} * s.slot_bytes();
      if (CUresult r = queue_piece(true, dst, rows, offset, s.slot_for(k), s.chunk_length(size, k));
          r != CUDA_SUCCESS) {
        return r;
      }
      if (CUresult r = api_.cuEventRecord(slot_done_[k % kStagingSlots], stream_);
          r != CUDA_SUCCESS) {
        return r;
      }
      if (k > 0) {  // the previous chunk is on the device: its slot is free
        if (CUresult r = wait_event(slot_done_[(k - 1) % kStagingSlots]); r != CUDA_SUCCESS) {
          return r;
        }
        s.publish_consumed(k);
      }
    }
    if (CUresult r = wait_event(slot_done_[(n - 1) % kStagingSlots]); r != CUDA_SUCCESS) return r;
    s.publish_consumed(n);
    return CUDA_SUCCESS;
  });
}

Timed Engine::copy_out(uint64_t src, uint64_t size, const wire::RowShape& rows, uint64_t deadline_ns,
                       const std::function<bool()>& stop) {
  if (!staging_ || size == 0) return {CUDA_ERROR_INVALID_VALUE, 0};
  StagingArea& s = *staging_;
  const uint32_t n = s.chunks(size);
  return timed([&]() -> CUresult {
    for (uint32_t k = 0; k < n; ++k) {
      // The slot's previous chunk (k - 2) must have been copied out.
      if (k >= kStagingSlots &&
          s.wait_consumed(k - 1, deadline_ns, stop) != StagingArea::Wait::kReady) {
        return kStagingBroken;
      }
      const uint64_t offset = uint64_t{k} * s.slot_bytes();
      if (CUresult r = queue_piece(false, src, rows, offset, s.slot_for(k), s.chunk_length(size, k));
          r != CUDA_SUCCESS) {
        return r;
      }
      if (CUresult r = api_.cuEventRecord(slot_done_[k % kStagingSlots], stream_);
          r != CUDA_SUCCESS) {
        return r;
      }
      if (k > 0) {  // the previous chunk has landed: the daemon may copy it out
        if (CUresult r = wait_event(slot_done_[(k - 1) % kStagingSlots]); r != CUDA_SUCCESS) {
          return r;
        }
        s.publish_filled(k);
      }
    }
    if (CUresult r = wait_event(slot_done_[(n - 1) % kStagingSlots]); r != CUDA_SUCCESS) return r;
    s.publish_filled(n);
    return CUDA_SUCCESS;
  });
}

Timed Engine::copy_area(bool to_device, uint64_t device, uint64_t offset, uint64_t size) {
  uint8_t* host = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!area_ || offset > area_bytes_ || size > area_bytes_ - offset)
      return {CUDA_ERROR_INVALID_VALUE, 0};
    host = area_ + offset;
  }
  return timed([&] {
    return to_device ? api_.cuMemcpyHtoDAsync(device, host, size, stream_)
                     : api_.cuMemcpyDtoHAsync(host, device, size, stream_);
  });
}

}  // namespace vgpu::executor::cuda
