// The forwarded calls as C++ types, derived from calls.def: the Op enum, one
// <Name>Request / <Name>Reply struct pair per call, and Call<Op> traits.
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "vgpu/protocol/wire_header.h"

namespace vgpu::proto {

static_assert(std::endian::native == std::endian::little,
              "the wire format is little-endian; a big-endian port needs byte swaps here");

enum class Where : uint8_t { kImmediate, kQueued };

enum class Op : uint16_t {
#define VGPU_CALL(id, Name, ...) Name = id,
#include "vgpu/protocol/calls.def"
#undef VGPU_CALL
};

#define VGPU_UNPAREN(...) __VA_ARGS__
#define VGPU_CALL(id, Name, where, tail, req_size, req, rep_size, rep) \
  struct Name##Request {                                              \
    VGPU_UNPAREN req                                                  \
  };                                                                  \
  struct Name##Reply {                                                \
    VGPU_UNPAREN rep                                                  \
  };
#include "vgpu/protocol/calls.def"
#undef VGPU_CALL

template <Op op>
struct Call;

#define VGPU_CALL(id, Name, where_, tail, req_size, req, rep_size, rep)                        \
  template <>                                                                                  \
  struct Call<Op::Name> {                                                                      \
    using Request = Name##Request;                                                             \
    using Reply = Name##Reply;                                                                 \
    static constexpr Op op = Op::Name;                                                         \
    static constexpr Where where = Where::where_;                                              \
    static constexpr uint32_t max_tail = tail;                                                 \
    static constexpr std::string_view name = #Name;                                            \
  };                                                                                           \
  static_assert(sizeof(Name##Request) == (req_size), #Name "Request: wire size changed");     \
  static_assert(sizeof(Name##Reply) == (rep_size), #Name "Reply: wire size changed");         \
  static_assert(std::has_unique_object_representations_v<Name##Request>,                      \
                #Name "Request has implicit padding");                                        \
  static_assert(std::has_unique_object_representations_v<Name##Reply>,                        \
                #Name "Reply has implicit padding");                                          \
  static_assert((req_size) % 8 == 0 && (rep_size) % 8 == 0, #Name ": sizes are 8-aligned");   \
  static_assert(VGPU_MSG_HEADER_SIZE + (req_size) + (tail) <= VGPU_MSG_MAX_SIZE,               \
                #Name ": largest request fits a message");                                     \
  static_assert(Where::where_ != Where::kQueued || (rep_size) == 8,                              \
                #Name ": a queued call's reply is one reserved u64");
#include "vgpu/protocol/calls.def"
#undef VGPU_CALL

// The op a request type belongs to, for encoders.
template <class Request>
struct OpOf;
#define VGPU_CALL(id, Name, ...)                   \
  template <>                                      \
  struct OpOf<Name##Request> {                     \
    static constexpr Op value = Op::Name;          \
  };
#include "vgpu/protocol/calls.def"
#undef VGPU_CALL

// LaunchKernelRequest::flags: bit 0 cooperative; bits 8-11, 12-15 and 16-19
// the thread block cluster's x, y and z less one (0 everywhere: no cluster,
// as a guest that knows none sends).
inline constexpr uint32_t kLaunchCooperative = 0x1;
inline constexpr uint32_t kLaunchClusterShift = 8;
inline constexpr uint32_t kLaunchClusterMask = 0xfff00;
inline constexpr uint32_t kLaunchFlagsKnown = kLaunchCooperative | kLaunchClusterMask;
// Each dimension 1..16 (the caller checked).
inline uint32_t launch_cluster_flags(const uint32_t dims[3]) {
  return ((dims[0] - 1) | (dims[1] - 1) << 4 | (dims[2] - 1) << 8) << kLaunchClusterShift;
}
inline void launch_cluster_dims(uint32_t flags, uint32_t dims[3]) {
  const uint32_t c = (flags & kLaunchClusterMask) >> kLaunchClusterShift;
  dims[0] = (c & 0xf) + 1;
  dims[1] = (c >> 4 & 0xf) + 1;
  dims[2] = (c >> 8 & 0xf) + 1;
}

// Name of an opcode ("Malloc"), or empty if unknown.
std::string_view op_name(uint16_t opcode);
bool is_known_op(uint16_t opcode);
// Whether a known opcode is answered at once or queued.
Where where_of(uint16_t opcode);

}  // namespace vgpu::proto
