// Allocation, copies and memset. Host bytes move through the caller's data
// area; every range is checked against it before work is queued.
#include "vgpu/executor/call_handler.h"
#include "vgpu/protocol/rows.h"

namespace vgpu::executor {

using namespace vgpu::proto;


Outcome CallHandler::handle(const vgpu_msg_header&, const MallocRequest& r,
                            std::span<const uint8_t>) {
  MallocReply rep{0};
  if (r.size != 0) {  // cudaMalloc of zero bytes succeeds with a null pointer
    if (Status s = backend_->mem_alloc(caller_->context, r.size, &rep.dptr); !ok(s)) return Outcome::failure(s);
  }
  Outcome o;
  o.set_reply(rep);
  return o;
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const FreeRequest& r,
                            std::span<const uint8_t>) {
  if (r.dptr == 0) return queue(h, kDefaultStream, Synchronize{});  // cudaFree(NULL) just syncs
  return queue(h, kDefaultStream, Free{r.dptr});
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const MemcpyHtoDRequest& r,
                            std::span<const uint8_t>) {
  const uint8_t* src = data_range(r.data_offset, r.size);
  if (!src) return Outcome::failure(Status::kInvalidValue);
  if (r.size == 0) return queue(h, r.stream, Synchronize{});
  return queue(h, r.stream, CopyHtoD{r.dst, src, r.size});
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const MemcpyDtoHRequest& r,
                            std::span<const uint8_t>) {
  uint8_t* dst = data_range(r.data_offset, r.size);
  if (!dst) return Outcome::failure(Status::kInvalidValue);
  if (r.size == 0) return queue(h, r.stream, Synchronize{});
  return queue(h, r.stream, CopyDtoH{r.src, dst, r.size});
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const MemcpyDtoDRequest& r,
                            std::span<const uint8_t>) {
  if (r.size == 0) return queue(h, r.stream, Synchronize{});
  return queue(h, r.stream, CopyDtoD{r.dst, r.src, r.size});
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const MemcpyRowsRequest& r,
                            std::span<const uint8_t>) {
  uint64_t dst_span = 0, src_span = 0;
  if (r.reserved != 0 || r.kind > kRowsDeviceToDevice ||
      !rows_span(r.width, r.height, r.dst_pitch, &dst_span) ||
      !rows_span(r.width, r.height, r.src_pitch, &src_span)) {
    return Outcome::failure(Status::kInvalidValue);
  }
  CopyRows c{r.kind, r.dst, r.dst_pitch, r.src, r.src_pitch, r.width, r.height, nullptr};
  if (r.kind == kRowsHostToDevice) c.host = data_range(r.src, src_span);
  if (r.kind == kRowsDeviceToHost) c.host = data_range(r.dst, dst_span);
  if (r.kind != kRowsDeviceToDevice && !c.host) return Outcome::failure(Status::kInvalidValue);
  return queue(h, r.stream, c);
}

Outcome CallHandler::handle(const vgpu_msg_header& h, const MemsetRequest& r,
                            std::span<const uint8_t>) {
  if (r.size == 0) return queue(h, r.stream, Synchronize{});
  // cudaMemset sets each byte to the value converted to unsigned char.
  return queue(h, r.stream, Memset{r.dst, r.size, static_cast<uint8_t>(r.value)});
}

}  // namespace vgpu::executor
