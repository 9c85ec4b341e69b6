// PTX fundamental types and the qualifiers shared by parameter and variable
// declarations.
#pragma once

#include <cstdint>
#include <string_view>

namespace vgpu::fatbin::detail {

struct PtxType {
  uint32_t size = 0;      // bytes
  bool floating = false;  // initializers must then be 0f/0d bit patterns
};

// .b8 .u8 .s8 ... .b128, .f16 .bf16 .f32 .f64 and packed forms; false for
// anything else (.pred is not a memory type).
bool ptx_type(std::string_view token, PtxType* out);

// .v2 .v4 .v8: the element count; false for anything else.
bool ptx_vector(std::string_view token, uint32_t* count);

// State spaces that may qualify a pointer parameter (.ptr .global ...).
bool ptx_state_space(std::string_view token);

// A power of two from 1 to 65536 (an .align value).
bool valid_alignment(uint64_t align);

}  // namespace vgpu::fatbin::detail
