#include "copy.h"

#include <algorithm>
#include <cstring>

#include "api.h"

namespace vgpu::intercept {

Status copy_to_device(Connection& c, uint64_t dst, const void* src, uint64_t size,
                      uint64_t stream, bool sync) {
  if (Status s = c.ensure(); !ok(s)) return s;
  if (size == 0) return sync ? with_async_errors(c, Status::kSuccess) : Status::kSuccess;
  Status status = Status::kSuccess;
  uint64_t last = 0;
  const auto* bytes = static_cast<const uint8_t*>(src);
  for (uint64_t done = 0; done < size;) {
    const uint64_t len = std::min(c.chunk_size(), size - done);
    uint64_t offset = 0;
    if (Status s = c.stage(len, &offset); !ok(s)) return s;
    std::memcpy(c.data(offset), bytes + done, len);
    Completion comp;
    comp.release_staging = true;
    comp.staging_offset = offset;
    comp.result = sync ? &status : nullptr;
    if (Status s = c.post(proto::MemcpyHtoDRequest{dst + done, offset, len, stream}, {}, &comp, &last);
        !ok(s))
      return s;
    done += len;
  }
  if (!sync) return Status::kSuccess;
  if (Status s = c.drain_until(last); !ok(s)) return s;
  return with_async_errors(c, status);
}

Status copy_from_device(Connection& c, void* dst, uint64_t src, uint64_t size, uint64_t stream,
                        bool sync) {
  if (Status s = c.ensure(); !ok(s)) return s;
  if (size == 0) return sync ? with_async_errors(c, Status::kSuccess) : Status::kSuccess;
  Status status = Status::kSuccess;
  uint64_t last = 0;
  auto* bytes = static_cast<uint8_t*>(dst);
  for (uint64_t done = 0; done < size;) {
    const uint64_t len = std::min(c.chunk_size(), size - done);
    uint64_t offset = 0;
    if (Status s = c.stage(len, &offset); !ok(s)) return s;
    Completion comp;
    comp.release_staging = true;
    comp.staging_offset = offset;
    comp.copy_to = bytes + done;
    comp.copy_size = len;
    comp.result = sync ? &status : nullptr;
    if (Status s = c.post(proto::MemcpyDtoHRequest{src + done, offset, len, stream}, {}, &comp, &last);
        !ok(s))
      return s;
    done += len;
  }
  if (!sync) return Status::kSuccess;
  if (Status s = c.drain_until(last); !ok(s)) return s;
  return with_async_errors(c, status);
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
