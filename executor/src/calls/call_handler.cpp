// Entry point and shared helpers of the call handler.
#include "vgpu/executor/call_handler.h"

#include <cassert>

namespace vgpu::executor {

Outcome CallHandler::handle(const Caller& caller, std::span<const uint8_t> message) {
  vgpu_msg_header h;
  if (message.size() < sizeof h) return reject({}, proto::DecodeError::kTruncated);
  std::memcpy(&h, message.data(), sizeof h);
  if (auto e = proto::check_header(h, message.size()); e != proto::DecodeError::kNone)
    return reject(h, e);
  if (auto e = proto::check_request(h); e != proto::DecodeError::kNone) return reject(h, e);
  caller_ = &caller;
  // Reset on the way out, so that the handler's Outcome (1 KiB) is returned
  // in place: a named copy to return would be copied once more per call.
  struct Forget {
    const Caller*& caller;
    ~Forget() { caller = nullptr; }
  } forget{caller_};
  return proto::dispatch(h, message.subspan(sizeof h, h.payload_len), *this);
}

bool CallHandler::slow(uint16_t opcode) const {
  using proto::Op;
  if (!proto::is_known_op(opcode) || proto::where_of(opcode) != proto::Where::kImmediate) {
    return false;
  }
  switch (static_cast<Op>(opcode)) {
    case Op::ModuleLoad:  // decompress and parse what the guest chose (bounded by the backend)
      return true;
    // Answered from what the backend knows of the device, or by the session.
    case Op::Goodbye:
    case Op::GetDeviceCount:
    case Op::GetDeviceProperties:
    case Op::DeviceGetAttribute:
    case Op::DriverGetVersion:
    case Op::TenantUsage:
    case Op::TenantBudget:  // the daemon's accounting, in memory for a connected VM
    case Op::TenantProcesses:
      return false;
    default:
      return backend_->immediate_calls_wait();
  }
}

Outcome CallHandler::reject(const vgpu_msg_header&, proto::DecodeError error) {
  Outcome o;
  o.status = proto::status_for(error);
  o.malformed = true;
  return o;
}

uint8_t* CallHandler::data_range(uint64_t offset, uint64_t size) const {
  const uint64_t limit = caller_->data_area.size();
  if (offset > limit || size > limit - offset) return nullptr;
  return caller_->data_area.data() + offset;
}

Outcome CallHandler::queue(const vgpu_msg_header& h, Handle stream, WorkOp op) {
  // Only calls declared kQueued may be answered later (their reply is fixed).
  assert(proto::where_of(h.opcode) == proto::Where::kQueued);
  Work work{caller_->context, stream, std::move(op)};
  Outcome o;
  if (Status s = backend_->accept(work); !ok(s)) {
    o.status = s;
    return o;
  }
  proto::ReplyTo reply;
  reply.channel = caller_->channel;
  reply.request_id = h.request_id;
  reply.client = h.client;
  reply.opcode = h.opcode;
  reply.quiet = (h.flags & VGPU_MSG_QUIET) != 0;
  reply.received_ns = reply.quiet ? 0 : caller_->received_ns;
  sink_->submit(caller_->tenant, std::move(work), reply);
  o.kind = Outcome::Kind::kQueued;
  return o;
}

}  // namespace vgpu::executor
