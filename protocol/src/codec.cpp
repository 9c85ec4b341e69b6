#include "vgpu/protocol/codec.h"

namespace vgpu::proto {

std::string_view op_name(uint16_t opcode) {
  switch (static_cast<Op>(opcode)) {
#define VGPU_CALL(id, Name, ...) \
  case Op::Name:                 \
    return #Name;
#include "vgpu/protocol/calls.def"
#undef VGPU_CALL
  }
  return {};
}

bool is_known_op(uint16_t opcode) { return !op_name(opcode).empty(); }

Where where_of(uint16_t opcode) {
  switch (static_cast<Op>(opcode)) {
#define VGPU_CALL(id, Name, ...) \
  case Op::Name:                 \
    return Call<Op::Name>::where;
#include "vgpu/protocol/calls.def"
#undef VGPU_CALL
  }
  return Where::kImmediate;
}

std::string_view decode_error_name(DecodeError e) {
  switch (e) {
    case DecodeError::kNone: return "ok";
    case DecodeError::kBadMagic: return "bad magic";
    case DecodeError::kBadVersion: return "unsupported protocol version";
    case DecodeError::kUnknownOpcode: return "unknown opcode";
    case DecodeError::kBadFlags: return "unknown flags";
    case DecodeError::kTooLong: return "message over the size limit";
    case DecodeError::kTruncated: return "truncated message";
    case DecodeError::kBadPayloadSize: return "payload size does not match the call";
    case DecodeError::kTailTooLong: return "variable part over the call's bound";
    case DecodeError::kNotARequest: return "not a request";
    case DecodeError::kNotAReply: return "not a reply";
  }
  return "unknown decode error";
}

Status status_for(DecodeError e) {
  switch (e) {
    case DecodeError::kNone: return Status::kSuccess;
    case DecodeError::kUnknownOpcode: return Status::kNotSupported;
    case DecodeError::kBadVersion: return Status::kInsufficientDriver;
    default: return Status::kInvalidValue;
  }
}

DecodeError check_header(const vgpu_msg_header& h, size_t available) {
  if (h.magic != VGPU_MSG_MAGIC) return DecodeError::kBadMagic;
  if (h.version != VGPU_PROTOCOL_VERSION) return DecodeError::kBadVersion;
  if (h.flags & ~static_cast<uint32_t>(VGPU_MSG_KNOWN_FLAGS)) return DecodeError::kBadFlags;
  if (h.payload_len > VGPU_MSG_MAX_PAYLOAD) return DecodeError::kTooLong;
  if (available < VGPU_MSG_HEADER_SIZE + static_cast<size_t>(h.payload_len))
    return DecodeError::kTruncated;
  return DecodeError::kNone;
}

DecodeError check_request(const vgpu_msg_header& h) {
  if (h.flags & VGPU_MSG_REPLY) return DecodeError::kNotARequest;
  if (h.opcode == VGPU_OP_PAD) return DecodeError::kNotARequest;
  if (!is_known_op(h.opcode)) return DecodeError::kUnknownOpcode;
  return DecodeError::kNone;
}

}  // namespace vgpu::proto
