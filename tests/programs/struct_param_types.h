// Structs passed by value to the kernels of struct_param.cu. Shared with the
// sim plug-in so both sides agree on one definition; the static_asserts pin
// the layout (the same under nvcc's device compiler, nvcc's host compiler
// and g++, which is what the parameter buffer relies on).
#pragma once

#include <cstddef>

namespace vt_struct {

struct Vec3 {  // float3-like: 12 bytes, 4-aligned
  float x, y, z;
};

// Internal padding: 7 bytes after c, none after d, v right after i, 8-aligned.
struct Padded {
  char c;
  double d;
  int i;
  Vec3 v;
};
static_assert(offsetof(Padded, c) == 0);
static_assert(offsetof(Padded, d) == 8);
static_assert(offsetof(Padded, i) == 16);
static_assert(offsetof(Padded, v) == 20);
static_assert(sizeof(Padded) == 32 && alignof(Padded) == 8);

// Arrays inside a struct: 2 bytes of padding after count, 1 at the end.
struct WithArray {
  short count;
  float values[5];
  unsigned char bytes[3];
};
static_assert(offsetof(WithArray, values) == 4);
static_assert(offsetof(WithArray, bytes) == 24);
static_assert(sizeof(WithArray) == 28 && alignof(WithArray) == 4);

// A large parameter (528 bytes) with a double after an int array.
struct Big {
  int values[128];
  int count;
  double scale;
};
static_assert(offsetof(Big, count) == 512);
static_assert(offsetof(Big, scale) == 520);
static_assert(sizeof(Big) == 528 && alignof(Big) == 8);

}  // namespace vt_struct
