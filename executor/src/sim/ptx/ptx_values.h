// Internal to the interpreter: register values as the types of PTX see them, and conversions.
// A register is a 64-bit cell holding its value normalized for the type that wrote it (signed
// types sign-extended, others zero-extended), so a read just reinterprets the low bytes.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "ptx_program.h"

namespace vgpu::executor::sim::ptx {

inline uint64_t mask_of(int bytes) { return bytes >= 8 ? ~0ull : ((1ull << (bytes * 8)) - 1); }
inline uint64_t normalize(uint64_t v, Type ty) {
  int n = type_size(ty);
  if (ty == Type::kPred) return v & 1;
  if (n >= 8 || n == 0) return v;
  if (type_signed(ty)) { int s = 64 - n * 8; return (uint64_t)(((int64_t)(v << s)) >> s); }
  return v & mask_of(n);
}
inline int64_t sx(uint64_t v, int bytes) { int s = 64 - bytes * 8; return bytes >= 8 ? (int64_t)v : ((int64_t)(v << s)) >> s; }
inline float as_f32(uint64_t v) { float f; uint32_t b = (uint32_t)v; memcpy(&f, &b, 4); return f; }
inline double as_f64(uint64_t v) { double d; memcpy(&d, &v, 8); return d; }
inline uint64_t bits_f32(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
inline uint64_t bits_f64(double d) { uint64_t b; memcpy(&b, &d, 8); return b; }

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);  // round to nearest even
inline float bf16_to_float(uint16_t b) { return as_f32((uint64_t)b << 16); }
inline uint16_t float_to_bf16(float f) {  // round to nearest even; a NaN stays a NaN
  const uint32_t x = (uint32_t)bits_f32(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

// PTX's min and max: a NaN operand yields the other; of +0 and -0, min is -0 and max +0 (the
// C library's fmin/fmax may return either zero, and a compiler may swap their operands).
inline double float_min(double a, double b) {
  if (a != a) return b;
  if (b != b || (a == b && std::signbit(a))) return a;
  return a < b ? a : b;
}
inline double float_max(double a, double b) {
  if (a != a) return b;
  if (b != b || (a == b && !std::signbit(a))) return a;
  return a > b ? a : b;
}

// A float-typed value (f16/bf16/f32/f64) as a double, and back.
inline double get_float(uint64_t v, Type ty) {
  return ty == Type::kF32 ? as_f32(v) : ty == Type::kF64 ? as_f64(v)
       : ty == Type::kBF16 ? bf16_to_float((uint16_t)v) : half_to_float((uint16_t)v);
}
inline uint64_t put_float(double d, Type ty) {
  return ty == Type::kF32 ? bits_f32((float)d) : ty == Type::kF64 ? bits_f64(d)
       : ty == Type::kBF16 ? float_to_bf16((float)d) : float_to_half((float)d);
}


// An f16x2 or bf16x2 operation (`pair`): `f` on each 16-bit lane of a, b and c, computed in
// float and rounded back to the lane's type (saturated to [0, 1] with .sat).
template <typename F>
uint64_t per_half(Type pair, uint64_t a, uint64_t b, uint64_t c, bool sat, F f) {
  const Type lane_type = pair == Type::kBF16x2 ? Type::kBF16 : Type::kF16;
  uint64_t r = 0;
  for (int lane = 0; lane < 2; ++lane) {
    const int s = 16 * lane;
    float v = f((float)get_float((a >> s) & 0xffff, lane_type), (float)get_float((b >> s) & 0xffff, lane_type),
                (float)get_float((c >> s) & 0xffff, lane_type));
    if (sat) v = v != v ? 0.0f : v < 0 ? 0.0f : v > 1 ? 1.0f : v;
    r |= put_float(v, lane_type) << s;
  }
  return r;
}

// setp's comparison of two values of a type (float comparisons with their unordered forms).
bool compare(Cmp c, uint64_t a, uint64_t b, Type ty);
// cvt: every integer/float conversion with its rounding mode and saturation.
uint64_t convert(const Instr& in, uint64_t v);

}  // namespace vgpu::executor::sim::ptx
