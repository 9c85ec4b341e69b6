// Encoding and decoding of messages. Decoders take bytes already copied out of
// shared memory (so the guest cannot change them underneath) and check every
// field before anything uses it.
#pragma once

#include <cstring>
#include <span>
#include <string_view>

#include "vgpu/protocol/calls.h"
#include "vgpu/protocol/status.h"

namespace vgpu::proto {

enum class DecodeError {
  kNone = 0,
  kBadMagic,
  kBadVersion,
  kUnknownOpcode,
  kBadFlags,
  kTooLong,          // header + payload over VGPU_MSG_MAX_SIZE
  kTruncated,        // fewer bytes than the header says
  kBadPayloadSize,   // payload shorter than the fixed struct, or a reply of the wrong size
  kTailTooLong,      // variable tail over the call's bound
  kNotARequest,      // a reply (or padding) where a request was expected
  kNotAReply,
};
std::string_view decode_error_name(DecodeError e);
// The status an error reply carries for a message rejected with `e`.
Status status_for(DecodeError e);

// Checks the header alone: magic, version, known flags, size bound.
// `available` is how many bytes the caller holds (header + payload).
DecodeError check_header(const vgpu_msg_header& h, size_t available);

// Checks that `h` (already header-checked) is a request with a known opcode.
DecodeError check_request(const vgpu_msg_header& h);

// Bytes a request of this call with `tail_len` tail bytes needs (header included).
template <Op op>
constexpr size_t request_size(size_t tail_len) {
  return VGPU_MSG_HEADER_SIZE + sizeof(typename Call<op>::Request) + tail_len;
}

inline vgpu_msg_header make_header(uint16_t opcode, uint64_t request_id, uint32_t flags,
                                   uint32_t payload_len, int32_t status) {
  vgpu_msg_header h{};
  h.magic = VGPU_MSG_MAGIC;
  h.version = VGPU_PROTOCOL_VERSION;
  h.opcode = opcode;
  h.request_id = request_id;
  h.flags = flags;
  h.payload_len = payload_len;
  h.client = 0;
  h.status = status;
  return h;
}

// Writes header + request + tail into `out` (at least request_size bytes).
// Returns the bytes written (not padded).
template <class Request>
size_t encode_request(std::span<uint8_t> out, uint64_t request_id, uint32_t flags,
                      const Request& req, std::span<const uint8_t> tail = {}) {
  constexpr Op op = OpOf<Request>::value;
  const size_t payload = sizeof(Request) + tail.size();
  const vgpu_msg_header h =
      make_header(static_cast<uint16_t>(op), request_id, flags, static_cast<uint32_t>(payload), 0);
  std::memcpy(out.data(), &h, sizeof h);
  std::memcpy(out.data() + sizeof h, &req, sizeof req);
  if (!tail.empty()) std::memcpy(out.data() + sizeof h + sizeof req, tail.data(), tail.size());
  return sizeof h + payload;
}

// Splits a request payload into its fixed struct and its tail.
template <Op op>
DecodeError decode_request(std::span<const uint8_t> payload, typename Call<op>::Request* req,
                           std::span<const uint8_t>* tail) {
  using Request = typename Call<op>::Request;
  if (payload.size() < sizeof(Request)) return DecodeError::kBadPayloadSize;
  const size_t tail_len = payload.size() - sizeof(Request);
  if (tail_len > Call<op>::max_tail) return DecodeError::kTailTooLong;
  std::memcpy(req, payload.data(), sizeof(Request));
  *tail = payload.subspan(sizeof(Request));
  return DecodeError::kNone;
}

// A reply is either a failure (status != 0, empty payload) or a success
// carrying exactly the call's Reply struct.
template <Op op>
DecodeError decode_reply(const vgpu_msg_header& h, std::span<const uint8_t> payload,
                         typename Call<op>::Reply* rep) {
  if (!(h.flags & VGPU_MSG_REPLY)) return DecodeError::kNotAReply;
  if (h.status != 0) return payload.empty() ? DecodeError::kNone : DecodeError::kBadPayloadSize;
  if (payload.size() != sizeof(typename Call<op>::Reply)) return DecodeError::kBadPayloadSize;
  std::memcpy(rep, payload.data(), sizeof(typename Call<op>::Reply));
  return DecodeError::kNone;
}

// Host dispatch, derived from calls.def: decodes the request for its opcode and
// calls handler.handle(header, request, tail), or handler.reject(header, error)
// when the message is malformed or its opcode unknown. Every call in calls.def
// must have a handle() overload, so a forgotten call does not compile.
template <class Handler>
auto dispatch(const vgpu_msg_header& h, std::span<const uint8_t> payload, Handler& handler) {
  switch (static_cast<Op>(h.opcode)) {
#define VGPU_CALL(id, Name, ...)                                                      \
  case Op::Name: {                                                                   \
    Name##Request req;                                                               \
    std::span<const uint8_t> tail;                                                   \
    if (DecodeError e = decode_request<Op::Name>(payload, &req, &tail);              \
        e != DecodeError::kNone)                                                     \
      return handler.reject(h, e);                                                   \
    return handler.handle(h, req, tail);                                             \
  }
#include "vgpu/protocol/calls.def"
#undef VGPU_CALL
  }
  return handler.reject(h, DecodeError::kUnknownOpcode);
}

}  // namespace vgpu::proto
