// Copies of rows (2D and 3D copies) through the data area: as many whole rows
// per request as a chunk holds (MemcpyRows), packed back to back when staged;
// rows of pinned memory go as they lie. A row wider than a chunk goes as a
// plain copy of its own.
#include <algorithm>
#include <cstring>

#include "copy.h"
#include "vgpu/protocol/rows.h"

namespace vgpu::intercept {

namespace {

// Pinned rows go to the host in requests of at most this many bytes, as
// pinned plain copies do (copy.cpp).
constexpr uint64_t kPinnedPiece = 8ull << 20;

Status finish(Connection& c, Status status, uint64_t last, bool sync) REQUIRES(c.mutex()) {
  if (!sync) return Status::kSuccess;
  if (Status s = c.drain_until(last); !ok(s)) return s;
  return with_async_errors(c, status);
}

// Rows between the program's memory (`host`, rows `host_pitch` apart) and the
// device (`device`, `device_pitch`).
Status host_rows(Connection& c, bool to_device, uint8_t* host, uint64_t host_pitch,
                 uint64_t device, uint64_t device_pitch, uint64_t width, uint64_t height,
                 uint64_t stream, bool sync) REQUIRES(c.mutex()) {
  if (Status s = c.ensure(); !ok(s)) return s;
  uint64_t host_span = 0, device_span = 0;
  if (!proto::rows_span(width, height, host_pitch, &host_span) ||
      !proto::rows_span(width, height, device_pitch, &device_span)) {
    return Status::kInvalidValue;
  }
  Status status = Status::kSuccess;
  uint64_t last = 0;
  auto request = [&](uint64_t host_at, uint64_t pitch_there, uint64_t y, uint64_t rows) {
    proto::MemcpyRowsRequest r{};
    r.width = width;
    r.height = rows;
    r.stream = stream;
    r.kind = to_device ? proto::kRowsHostToDevice : proto::kRowsDeviceToHost;
    const uint64_t dev = device + y * device_pitch;
    r.dst = to_device ? dev : host_at;
    r.dst_pitch = to_device ? device_pitch : pitch_there;
    r.src = to_device ? host_at : dev;
    r.src_pitch = to_device ? pitch_there : device_pitch;
    return r;
  };
  if (const auto offset = c.pinned_offset(host, host_span)) {
    // The host reads or writes the program's rows in place.
    const uint64_t per = std::max<uint64_t>(1, kPinnedPiece / std::max(width, host_pitch));
    for (uint64_t y = 0; y < height; y += per) {
      const uint64_t rows = std::min(per, height - y);
      Completion comp;
      comp.pinned = true;
      comp.copy_bytes = rows * width;
      comp.result = sync ? &status : nullptr;
      if (Status s = c.post(request(*offset + y * host_pitch, host_pitch, y, rows), {}, &comp, &last); !ok(s)) {
        return s;
      }
    }
    return finish(c, status, last, sync);
  }
  const uint64_t per = c.chunk_size(width * height) / width;
  if (per == 0) {  // a row wider than a chunk: each row a plain copy
    for (uint64_t y = 0; y < height; ++y) {
      const bool end = y == height - 1;
      uint8_t* row = host + y * host_pitch;
      const uint64_t dev = device + y * device_pitch;
      const Status s = to_device ? copy_to_device(c, dev, row, width, stream, sync && end)
                                 : copy_from_device(c, row, dev, width, stream, sync && end);
      if (!ok(s)) return s;
    }
    return Status::kSuccess;
  }
  for (uint64_t y = 0; y < height; y += per) {
    const uint64_t rows = std::min(per, height - y);
    uint64_t offset = 0;
    if (Status s = c.stage(rows * width, &offset); !ok(s)) return s;
    Completion comp;
    comp.release_staging = true;
    comp.staging_offset = offset;
    comp.copy_bytes = rows * width;
    comp.result = sync ? &status : nullptr;
    if (to_device) {
      for (uint64_t i = 0; i < rows; ++i) {
        std::memcpy(c.data(offset + i * width), host + (y + i) * host_pitch, width);
      }
    } else {  // the rows land when the host answers
      comp.copy_to = host + y * host_pitch;
      comp.copy_size = rows * width;
      comp.copy_width = width;
      comp.copy_pitch = host_pitch;
    }
    if (Status s = c.post(request(offset, width, y, rows), {}, &comp, &last); !ok(s)) return s;
  }
  return finish(c, status, last, sync);
}

}  // namespace

Status copy_rows_to_device(Connection& c, uint64_t dst, const void* src, const Rows& rows,
                           uint64_t stream, bool sync) {
  // The source is only read.
  return host_rows(c, true, static_cast<uint8_t*>(const_cast<void*>(src)), rows.src_pitch, dst,
                   rows.dst_pitch, rows.width, rows.height, stream, sync);
}

Status copy_rows_from_device(Connection& c, void* dst, uint64_t src, const Rows& rows,
                             uint64_t stream, bool sync) {
  return host_rows(c, false, static_cast<uint8_t*>(dst), rows.dst_pitch, src, rows.src_pitch,
                   rows.width, rows.height, stream, sync);
}

Status copy_rows_on_device(Connection& c, uint64_t dst, uint64_t src, const Rows& rows,
                           uint64_t stream, bool sync) {
  if (Status s = c.ensure(); !ok(s)) return s;
  const proto::MemcpyRowsRequest req{dst,        rows.dst_pitch, src,    rows.src_pitch,
                                     rows.width, rows.height,    stream, proto::kRowsDeviceToDevice,
                                     0};
  if (!sync) return c.post(req, {}, nullptr);
  proto::MemcpyRowsReply rep{};
  return with_async_errors(c, c.call(req, {}, &rep));
}

}  // namespace vgpu::intercept
