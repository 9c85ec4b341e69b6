#include "ptx_types.h"

#include <array>

namespace vgpu::fatbin::detail {
namespace {

struct Named {
  std::string_view name;
  PtxType type;
};

constexpr std::array kTypes = {
    Named{".b8", {1, false}},     Named{".u8", {1, false}},     Named{".s8", {1, false}},
    Named{".b16", {2, false}},    Named{".u16", {2, false}},    Named{".s16", {2, false}},
    Named{".f16", {2, true}},     Named{".bf16", {2, true}},    Named{".b32", {4, false}},
    Named{".u32", {4, false}},    Named{".s32", {4, false}},    Named{".f32", {4, true}},
    Named{".f16x2", {4, true}},   Named{".bf16x2", {4, true}},  Named{".tf32", {4, true}},
    Named{".b64", {8, false}},    Named{".u64", {8, false}},    Named{".s64", {8, false}},
    Named{".f64", {8, true}},     Named{".b128", {16, false}},
};

}  // namespace

bool ptx_type(std::string_view token, PtxType* out) {
  for (const Named& n : kTypes) {
    if (n.name == token) {
      *out = n.type;
      return true;
    }
  }
  return false;
}

bool ptx_vector(std::string_view token, uint32_t* count) {
  if (token == ".v2") return *count = 2, true;
  if (token == ".v4") return *count = 4, true;
  if (token == ".v8") return *count = 8, true;
  return false;
}

bool ptx_state_space(std::string_view token) {
  return token == ".global" || token == ".const" || token == ".shared" || token == ".local";
}

bool valid_alignment(uint64_t align) {
  return align != 0 && align <= 65536 && (align & (align - 1)) == 0;
}

}  // namespace vgpu::fatbin::detail
