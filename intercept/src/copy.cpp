#include "copy.h"

#include <algorithm>
#include <cstring>


namespace vgpu::intercept {

namespace {

// Pinned copies go to the host in commands of at most this many bytes, so
// one large copy does not hold the GPU (or the sim) for long in one go.
constexpr uint64_t kPinnedPiece = 8ull << 20;

// A copy whose host side is pinned memory (in the data area): the host reads
// or writes the program's buffer in place; no staging copy.
Status copy_pinned(Connection& c, bool to_device, uint64_t offset, uint64_t device, uint64_t size,
                   uint64_t stream, bool sync) REQUIRES(c.mutex()) {
  Status status = Status::kSuccess;
  uint64_t last = 0;
  for (uint64_t done = 0; done < size;) {
    const uint64_t len = std::min(kPinnedPiece, size - done);
    Completion comp;
    comp.pinned = true;
    comp.copy_bytes = len;
    comp.result = sync ? &status : nullptr;
    const Status sent =
        to_device
            ? c.post(proto::MemcpyHtoDRequest{device + done, offset + done, len, stream}, {}, &comp, &last)
            : c.post(proto::MemcpyDtoHRequest{device + done, offset + done, len, stream}, {}, &comp, &last);
    if (!ok(sent)) return sent;
    done += len;
  }
  if (!sync) return Status::kSuccess;
  if (Status s = c.drain_until(last); !ok(s)) return s;
  return with_async_errors(c, status);
}

// Moves `size` bytes between host memory and the device in chunks that fit the
// data area, several in flight. `to_device` picks the direction.
Status copy_chunks(Connection& c, bool to_device, uint8_t* host, uint64_t device, uint64_t size,
                   uint64_t stream, bool sync) REQUIRES(c.mutex()) {
  if (Status s = c.ensure(); !ok(s)) return s;
  if (size == 0) return sync ? with_async_errors(c, Status::kSuccess) : Status::kSuccess;
  if (const auto offset = c.pinned_offset(host, size)) {
    return copy_pinned(c, to_device, *offset, device, size, stream, sync);
  }
  Status status = Status::kSuccess;
  uint64_t last = 0;
  for (uint64_t done = 0; done < size;) {
    const uint64_t len = std::min(c.chunk_size(size), size - done);
    uint64_t offset = 0;
    if (Status s = c.stage(len, &offset); !ok(s)) return s;
    Completion comp;
    comp.release_staging = true;
    comp.copy_bytes = len;
    comp.staging_offset = offset;
    comp.result = sync ? &status : nullptr;
    Status sent;
    if (to_device) {
      std::memcpy(c.data(offset), host + done, len);
      sent = c.post(proto::MemcpyHtoDRequest{device + done, offset, len, stream}, {}, &comp, &last);
    } else {
      comp.copy_to = host + done;  // the bytes land when the host answers
      comp.copy_size = len;
      sent = c.post(proto::MemcpyDtoHRequest{device + done, offset, len, stream}, {}, &comp, &last);
    }
    if (!ok(sent)) return sent;
    done += len;
  }
  if (!sync) return Status::kSuccess;
  if (Status s = c.drain_until(last); !ok(s)) return s;
  return with_async_errors(c, status);
}

}  // namespace

Status copy_to_device(Connection& c, uint64_t dst, const void* src, uint64_t size,
                      uint64_t stream, bool sync) {
  // The source is only read.
  return copy_chunks(c, true, static_cast<uint8_t*>(const_cast<void*>(src)), dst, size, stream, sync);
}

Status copy_from_device(Connection& c, void* dst, uint64_t src, uint64_t size, uint64_t stream,
                        bool sync) {
  return copy_chunks(c, false, static_cast<uint8_t*>(dst), src, size, stream, sync);
}

Status copy_on_device(Connection& c, uint64_t dst, uint64_t src, uint64_t size, uint64_t stream,
                      bool sync) {
  const proto::MemcpyDtoDRequest req{dst, src, size, stream};
  if (!sync) return c.post(req, {}, nullptr);
  proto::MemcpyDtoDReply rep{};
  return with_async_errors(c, c.call(req, {}, &rep));
}

Status set_on_device(Connection& c, uint64_t dst, int value, uint64_t size, uint64_t stream,
                     bool sync) {
  const proto::MemsetRequest req{dst, size, stream, value, 0};
  if (!sync) return c.post(req, {}, nullptr);
  proto::MemsetReply rep{};
  return with_async_errors(c, c.call(req, {}, &rep));
}

}  // namespace vgpu::intercept
