// cvt and setp semantics: conversions between every integer and float type with PTX's rounding
// modes and saturation, and comparisons with their unordered float forms.
#include <algorithm>
#include <cfenv>
#include <cmath>

#include "ptx_values.h"

namespace vgpu::executor::sim::ptx {

float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v = exp == 0 ? std::ldexp((float)man, -24) : exp == 31 ? (man ? NAN : INFINITY) : std::ldexp((float)(man | 0x400), (int)exp - 25);
  return sign ? -v : v;
}
static uint32_t float_to_half_bits(float f) {  // round to nearest even
  uint32_t x = (uint32_t)bits_f32(f), sign = (x >> 16) & 0x8000;
  int exp = (int)((x >> 23) & 0xff) - 127 + 15;
  uint32_t man = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return sign | 0x7c00 | (man ? 0x200 : 0);
  if (exp >= 31) return sign | 0x7c00;
  if (exp <= 0) {
    if (exp < -10) return sign;
    man |= 0x800000;
    uint32_t shift = 14 - exp, half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) ++half;
    return sign | half;
  }
  uint32_t h = sign | (exp << 10) | (man >> 13), rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return h;
}
uint16_t float_to_half(float f) { return static_cast<uint16_t>(float_to_half_bits(f)); }

// A float-typed value (f16/f32/f64) as a double, and back.

bool compare(Cmp c, uint64_t a, uint64_t b, Type ty) {
  if (type_float(ty)) {
    double x = get_float(a, ty), y = get_float(b, ty);
    bool un = std::isnan(x) || std::isnan(y);
    switch (c) {
      case Cmp::kEq: return !un && x == y; case Cmp::kNe: return !un && x != y;
      case Cmp::kLt: return !un && x < y; case Cmp::kLe: return !un && x <= y;
      case Cmp::kGt: return !un && x > y; case Cmp::kGe: return !un && x >= y;
      case Cmp::kEqu: return un || x == y; case Cmp::kNeu: return un || x != y;
      case Cmp::kLtu: return un || x < y; case Cmp::kLeu: return un || x <= y;
      case Cmp::kGtu: return un || x > y; case Cmp::kGeu: return un || x >= y;
      case Cmp::kNum: return !un; case Cmp::kNan: return un;
      default: return false;
    }
  }
  int n = type_size(ty);
  int64_t sa = sx(a, n), sb = sx(b, n);
  uint64_t ua = a & mask_of(n), ub = b & mask_of(n);
  bool sgn = type_signed(ty);
  switch (c) {
    case Cmp::kEq: return ua == ub; case Cmp::kNe: return ua != ub;
    case Cmp::kLt: return sgn ? sa < sb : ua < ub; case Cmp::kLe: return sgn ? sa <= sb : ua <= ub;
    case Cmp::kGt: return sgn ? sa > sb : ua > ub; case Cmp::kGe: return sgn ? sa >= sb : ua >= ub;
    case Cmp::kLo: return ua < ub; case Cmp::kLs: return ua <= ub;
    case Cmp::kHi: return ua > ub; case Cmp::kHs: return ua >= ub;
    default: return false;
  }
}

// Float -> integer as cvt does it: rounding mode, saturation to the range, NaN -> 0.
static uint64_t float_to_int(double d, uint32_t flags, Type to) {
  if (flags & kRni) d = std::nearbyint(d);
  else if (flags & kRmi) d = std::floor(d);
  else if (flags & kRpi) d = std::ceil(d);
  else d = std::trunc(d);
  if (std::isnan(d)) return 0;
  int n = type_size(to);
  if (type_signed(to)) {
    double lo = -std::ldexp(1.0, n * 8 - 1), hi = std::ldexp(1.0, n * 8 - 1) - 1;
    if (d <= lo) return normalize((uint64_t)(int64_t)lo, to);
    if (d >= hi) return normalize(n == 8 ? (uint64_t)INT64_MAX : (uint64_t)(int64_t)hi, to);
    return normalize((uint64_t)(int64_t)d, to);
  }
  if (d <= 0) return 0;
  double hi = std::ldexp(1.0, n * 8);
  if (d >= hi) return mask_of(n);
  return (uint64_t)d;
}

uint64_t convert(const Instr& in, uint64_t v) {
  if (in.flags & kToTf32) {
    const uint32_t bits = (uint32_t)v;
    if ((bits & 0x7f800000u) == 0x7f800000u) return bits;  // infinities and NaNs stay
    return (bits + 0x1000u) & 0xffffe000u;  // half of tf32's last place: ties round away from zero
  }
  Type to = in.type, from = in.type2;
  int fn = type_size(from);
  if (!type_float(from) && !type_float(to)) {  // integer -> integer
    uint64_t x = type_signed(from) ? (uint64_t)sx(v, fn) : (v & mask_of(fn));
    if (in.flags & kSat) {
      int tn = type_size(to);
      if (type_signed(to)) {
        int64_t lo = tn >= 8 ? INT64_MIN : -(1ll << (tn * 8 - 1)), hi = tn >= 8 ? INT64_MAX : (1ll << (tn * 8 - 1)) - 1;
        if (type_signed(from)) { int64_t s = (int64_t)x; x = (uint64_t)std::clamp(s, lo, hi); }
        else x = std::min<uint64_t>(x, (uint64_t)hi);
      } else {
        if (type_signed(from) && (int64_t)x < 0) x = 0;
        else x = std::min<uint64_t>(x, mask_of(tn));
      }
    }
    return normalize(x, to);
  }
  if (type_float(from) && !type_float(to)) return float_to_int(get_float(v, from), in.flags, to);
  int mode = (in.flags & kRz) ? FE_TOWARDZERO : (in.flags & kRm) ? FE_DOWNWARD : (in.flags & kRp) ? FE_UPWARD : FE_TONEAREST;
  if (mode != FE_TONEAREST) fesetround(mode);
  uint64_t out;
  if (!type_float(from)) {  // integer -> float
    // volatile: the conversion must happen while the rounding mode is set.
    if (to == Type::kF64) {
      volatile int64_t s = sx(v, fn);
      volatile uint64_t u = v & mask_of(fn);
      volatile double d = type_signed(from) ? (double)s : (double)u;
      out = bits_f64(d);
    } else if (type_signed(from)) { volatile int64_t s = sx(v, fn); volatile float f = (float)s; out = put_float(f, to); }
    else { volatile uint64_t u = v & mask_of(fn); volatile float f = (float)u; out = put_float(f, to); }
  } else {  // float -> float
    double d = get_float(v, from);
    if (in.flags & (kRni | kRzi | kRmi | kRpi)) d = (in.flags & kRni) ? std::nearbyint(d) : (in.flags & kRzi) ? std::trunc(d) : (in.flags & kRmi) ? std::floor(d) : std::ceil(d);
    if ((in.flags & kSat) && !std::isnan(d)) d = std::clamp(d, 0.0, 1.0);
    if (to == Type::kF32) { volatile double vd = d; volatile float f = (float)vd; out = bits_f32(f); }
    else out = put_float(d, to);
  }
  if (mode != FE_TONEAREST) fesetround(FE_TONEAREST);
  return out;
}

}  // namespace vgpu::executor::sim::ptx
