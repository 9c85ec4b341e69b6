#include <array>
#include <cstring>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "vgpu/protocol/codec.h"

using namespace vgpu;
using namespace vgpu::proto;

namespace {

std::vector<uint8_t> encode_launch(size_t params) {
  LaunchKernelRequest req{};
  req.function = 7;
  req.stream = 3;
  req.grid[0] = 4;
  req.block[0] = 256;
  std::vector<uint8_t> tail(params, 0xab);
  std::vector<uint8_t> buf(request_size<Op::LaunchKernel>(params));
  const size_t n = encode_request(buf, 42, VGPU_MSG_QUIET, req, tail);
  REQUIRE(n == buf.size());
  return buf;
}

vgpu_msg_header header_of(const std::vector<uint8_t>& buf) {
  vgpu_msg_header h;
  std::memcpy(&h, buf.data(), sizeof h);
  return h;
}

// Records what dispatch() decided.
struct Recorder {
  int handled = 0;
  DecodeError rejected = DecodeError::kNone;
  LaunchKernelRequest launch{};
  size_t tail_len = 0;
  int reject(const vgpu_msg_header&, DecodeError e) {
    rejected = e;
    return -1;
  }
  int handle(const vgpu_msg_header&, const LaunchKernelRequest& r, std::span<const uint8_t> t) {
    launch = r;
    tail_len = t.size();
    return ++handled;
  }
  template <class Req>
  int handle(const vgpu_msg_header&, const Req&, std::span<const uint8_t>) {
    return ++handled;
  }
};

int dispatch_bytes(const std::vector<uint8_t>& buf, Recorder& r) {
  const vgpu_msg_header h = header_of(buf);
  if (DecodeError e = check_header(h, buf.size()); e != DecodeError::kNone) return r.reject(h, e);
  if (DecodeError e = check_request(h); e != DecodeError::kNone) return r.reject(h, e);
  return dispatch(h, std::span(buf).subspan(VGPU_MSG_HEADER_SIZE, h.payload_len), r);
}

}  // namespace

TEST_CASE("a launch request round-trips through encode and dispatch") {
  auto buf = encode_launch(24);
  Recorder r;
  REQUIRE(dispatch_bytes(buf, r) == 1);
  CHECK(r.launch.function == 7);
  CHECK(r.launch.stream == 3);
  CHECK(r.launch.grid[0] == 4);
  CHECK(r.launch.block[0] == 256);
  CHECK(r.tail_len == 24);
  const auto h = header_of(buf);
  CHECK(h.request_id == 42);
  CHECK(h.flags == VGPU_MSG_QUIET);
  CHECK(h.opcode == static_cast<uint16_t>(Op::LaunchKernel));
}

TEST_CASE("every call's request round-trips with its own opcode") {
#define VGPU_CALL(id, Name, ...)                                                  \
  {                                                                               \
    Name##Request req;                                                            \
    std::memset(&req, 0x5a, sizeof req);                                          \
    std::vector<uint8_t> buf(request_size<Op::Name>(0));                          \
    encode_request(buf, id, 0, req);                                              \
    const auto h = header_of(buf);                                                \
    CHECK(h.opcode == id);                                                        \
    CHECK(check_header(h, buf.size()) == DecodeError::kNone);                     \
    Name##Request back;                                                           \
    std::span<const uint8_t> tail;                                                \
    REQUIRE(decode_request<Op::Name>(std::span(buf).subspan(VGPU_MSG_HEADER_SIZE), \
                                     &back, &tail) == DecodeError::kNone);        \
    CHECK(std::memcmp(&back, &req, sizeof req) == 0);                             \
    CHECK(tail.empty());                                                          \
    CHECK(op_name(id) == #Name);                                                  \
  }
#include "vgpu/protocol/calls.def"
#undef VGPU_CALL
}

TEST_CASE("replies decode only with the exact struct size or as a bare failure") {
  MallocReply rep{0xdead0000};
  auto h = make_header(static_cast<uint16_t>(Op::Malloc), 1, VGPU_MSG_REPLY, sizeof rep, 0);
  std::array<uint8_t, sizeof rep> bytes;
  std::memcpy(bytes.data(), &rep, sizeof rep);
  MallocReply out{};
  CHECK(decode_reply<Op::Malloc>(h, bytes, &out) == DecodeError::kNone);
  CHECK(out.dptr == 0xdead0000);
  CHECK(decode_reply<Op::Malloc>(h, std::span(bytes).first(4), &out) ==
        DecodeError::kBadPayloadSize);
  h.status = static_cast<int32_t>(Status::kMemoryAllocation);
  CHECK(decode_reply<Op::Malloc>(h, {}, &out) == DecodeError::kNone);
  CHECK(decode_reply<Op::Malloc>(h, bytes, &out) == DecodeError::kBadPayloadSize);
  h.flags = 0;
  CHECK(decode_reply<Op::Malloc>(h, {}, &out) == DecodeError::kNotAReply);
}

TEST_CASE("decoders reject corrupted headers") {
  Recorder r;
  SECTION("bad magic") {
    auto buf = encode_launch(8);
    buf[0] ^= 1;
    dispatch_bytes(buf, r);
    CHECK(r.rejected == DecodeError::kBadMagic);
  }
  SECTION("other protocol version") {
    auto buf = encode_launch(8);
    buf[4] = 2;
    dispatch_bytes(buf, r);
    CHECK(r.rejected == DecodeError::kBadVersion);
    CHECK(status_for(r.rejected) == Status::kInsufficientDriver);
  }
  SECTION("unknown opcode") {
    auto buf = encode_launch(8);
    buf[6] = 0xee;
    buf[7] = 0x7e;
    dispatch_bytes(buf, r);
    CHECK(r.rejected == DecodeError::kUnknownOpcode);
    CHECK(status_for(r.rejected) == Status::kNotSupported);
  }
  SECTION("padding is not a request") {
    auto buf = encode_launch(8);
    buf[6] = 0;
    buf[7] = 0;
    dispatch_bytes(buf, r);
    CHECK(r.rejected == DecodeError::kNotARequest);
  }
  SECTION("unknown flag bits") {
    auto buf = encode_launch(8);
    buf[16] |= 0x80;
    dispatch_bytes(buf, r);
    CHECK(r.rejected == DecodeError::kBadFlags);
  }
  SECTION("a reply where a request belongs") {
    auto buf = encode_launch(8);
    buf[16] |= VGPU_MSG_REPLY;
    dispatch_bytes(buf, r);
    CHECK(r.rejected == DecodeError::kNotARequest);
  }
  CHECK(r.handled == 0);
}

TEST_CASE("decoders reject truncated and oversized messages") {
  Recorder r;
  SECTION("fewer bytes than the header claims") {
    auto buf = encode_launch(64);
    buf.resize(buf.size() - 1);
    dispatch_bytes(buf, r);
    CHECK(r.rejected == DecodeError::kTruncated);
  }
  SECTION("payload shorter than the fixed request") {
    auto buf = encode_launch(0);
    auto h = header_of(buf);
    h.payload_len = sizeof(LaunchKernelRequest) - 8;
    std::memcpy(buf.data(), &h, sizeof h);
    dispatch_bytes(buf, r);
    CHECK(r.rejected == DecodeError::kBadPayloadSize);
  }
  SECTION("a tail on a call that takes none") {
    MallocRequest req{64};
    std::vector<uint8_t> tail(8, 1);
    std::vector<uint8_t> buf(request_size<Op::Malloc>(tail.size()));
    encode_request(buf, 1, 0, req, tail);
    dispatch_bytes(buf, r);
    CHECK(r.rejected == DecodeError::kTailTooLong);
  }
  SECTION("a tail over the call's bound") {
    auto buf = encode_launch(Call<Op::LaunchKernel>::max_tail + 8);
    dispatch_bytes(buf, r);
    CHECK(r.rejected == DecodeError::kTailTooLong);
  }
  SECTION("a length over the message limit") {
    auto buf = encode_launch(8);
    auto h = header_of(buf);
    h.payload_len = VGPU_MSG_MAX_PAYLOAD + 1;
    std::memcpy(buf.data(), &h, sizeof h);
    dispatch_bytes(buf, r);
    CHECK(r.rejected == DecodeError::kTooLong);
  }
  CHECK(r.handled == 0);
}

TEST_CASE("random bytes never decode into a handled call unless they are one") {
  std::mt19937_64 rng(1234);
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> buf(rng() % 200);
    for (auto& b : buf) b = static_cast<uint8_t>(rng());
    if (buf.size() >= VGPU_MSG_HEADER_SIZE && (i % 2)) {
      // Make half of them look plausible so the payload checks are reached.
      auto h = header_of(buf);
      h.magic = VGPU_MSG_MAGIC;
      h.version = VGPU_PROTOCOL_VERSION;
      h.flags = 0;
      h.opcode = static_cast<uint16_t>(Op::LaunchKernel);
      h.payload_len = static_cast<uint32_t>(rng() % 400);
      std::memcpy(buf.data(), &h, sizeof h);
    }
    Recorder r;
    if (buf.size() < VGPU_MSG_HEADER_SIZE) continue;
    dispatch_bytes(buf, r);
    if (r.handled) {
      const auto h = header_of(buf);
      CHECK(h.payload_len >= sizeof(LaunchKernelRequest));
      CHECK(h.payload_len + VGPU_MSG_HEADER_SIZE <= buf.size());
    }
  }
}
