// The semantics of each instruction, for one thread: memory access, atomics, calls and the
// interpreter loop itself.
#include <algorithm>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdio>

#include "ptx_exec.h"
#include "ptx_fast.h"
#include "ptx_values.h"

namespace vgpu::executor::sim::ptx {
namespace {

// 128-bit products for mul.hi/.wide on 64-bit values and carry chains (a GCC/Clang extension).
__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;


}  // namespace

uint8_t* address_in(Context& c, Thread& t, const Instr& in, const Operand& o, uint64_t bytes, Space space) {
  uint64_t a = (uint64_t)o.value;
  const Symbol* sym = nullptr;
  if (o.mem_base == 1) a += t.r[o.id];
  else if (o.mem_base == 2) {
    sym = &c.p->symbols[o.id];
    switch (sym->kind) {
      case SymbolKind::kFuncParam: {
        uint64_t off = t.param_base + sym->offset + a;
        if (off + bytes > t.pstack.size()) { trap(c, in, "parameter access out of range"); return nullptr; }
        return t.pstack.data() + off;
      }
      case SymbolKind::kLocal: a += t.local_base + sym->offset; break;
      case SymbolKind::kKernelParam:
        if (sym->offset + a + bytes > c.params.size() || sym->offset + a < a) { trap(c, in, "parameter access out of range"); return nullptr; }
        return c.params.data() + sym->offset + a;
      default: a += c.sym_value[o.id]; break;
    }
  }
  switch (space) {
    case Space::kShared:
      if (a + bytes > c.shared_size || a + bytes < a) { trap(c, in, "shared memory access out of range"); return nullptr; }
      return c.shared_mem.data() + a;
    case Space::kLocal:
      if (a + bytes > c.local_per_thread || a + bytes < a) { trap(c, in, "local memory access out of range"); return nullptr; }
      return t.local + a;
    default:
      if (a < kNullPage) {  // a null pointer, or a member of one: a GPU's illegal address
        trap(c, in, "illegal address " + std::to_string(a));
        c.result.outcome = Outcome::kIllegalAddress;
        return nullptr;
      }
      return reinterpret_cast<uint8_t*>(a);
  }
}

namespace {

// The host address of a memory operand in the instruction's state space.
// The common cases inline, as address_in has them: a global or generic address in a register
// is the host address the kernel holds; a shared one, an offset in the CTA's shared memory.
inline uint8_t* address(Context& c, Thread& t, const Instr& in, const Operand& o, uint64_t bytes) {
  if (o.mem_base == 1) {
    const uint64_t a = t.r[o.id] + (uint64_t)o.value;
    if (in.space == Space::kGlobal || in.space == Space::kGeneric) {
      if (a >= kNullPage) return reinterpret_cast<uint8_t*>(a);
    } else if (in.space == Space::kShared) {
      if (a + bytes <= c.shared_size && a + bytes >= a) return c.shared_mem.data() + a;
    }
  }
  return address_in(c, t, in, o, bytes, in.space);
}

// One fixed-size copy per width: a memcpy of a variable size compiles to `rep movs`, slow to
// start for the one to eight bytes a register takes.
template <int N>
uint64_t load_n(const uint8_t* p) {
  if constexpr (N == 1) return *p;
  else if constexpr (N == 2) { uint16_t v; memcpy(&v, p, 2); return v; }
  else if constexpr (N == 4) { uint32_t v; memcpy(&v, p, 4); return v; }
  else { uint64_t v; memcpy(&v, p, 8); return v; }
}
uint64_t load(const uint8_t* p, int n) {
  switch (n) {
    case 1: return load_n<1>(p);
    case 2: return load_n<2>(p);
    case 4: return load_n<4>(p);
    case 8: return load_n<8>(p);
    default: { uint64_t v = 0; memcpy(&v, p, (size_t)n); return v; }
  }
}
void store(uint8_t* p, uint64_t v, int n) {
  switch (n) {
    case 1: *p = (uint8_t)v; break;
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    case 8: memcpy(p, &v, 8); break;
    default: memcpy(p, &v, (size_t)n); break;
  }
}

// What an atomic operation leaves in memory that held `old` (n bytes, zero-extended).
uint64_t atomic_result(const Instr& in, int n, uint64_t old, uint64_t b, uint64_t cval) {
  uint64_t nv = old;
  Type ty = in.type;
  switch (in.mode) {
    case Mode::kAdd: nv = type_float(ty) ? put_float(get_float(old, ty) + get_float(b, ty), ty) : old + b; break;
    case Mode::kMin: case Mode::kMax: {
      bool less;
      if (type_float(ty)) less = get_float(b, ty) < get_float(old, ty);
      else if (type_signed(ty)) less = sx(b, n) < sx(old, n);
      else less = (b & mask_of(n)) < (old & mask_of(n));
      if ((in.mode == Mode::kMin) == less) nv = b;
      if (type_float(ty) && std::isnan(get_float(old, ty))) nv = b;
      break;
    }
    case Mode::kInc: nv = ((old & mask_of(n)) >= (b & mask_of(n))) ? 0 : old + 1; break;
    case Mode::kDec: nv = ((old & mask_of(n)) == 0 || (old & mask_of(n)) > (b & mask_of(n))) ? b : old - 1; break;
    case Mode::kExch: nv = b; break;
    case Mode::kCas: nv = ((old & mask_of(n)) == (b & mask_of(n))) ? cval : old; break;
    case Mode::kAnd: nv = old & b; break;
    case Mode::kOr: nv = old | b; break;
    case Mode::kXor: nv = old ^ b; break;
    default: break;
  }
  return nv;
}

// Replaces the n-byte value at p by atomic_result's, atomically: CTAs run on several host
// threads. A 2-byte value is exchanged within its aligned 4-byte word; a misaligned address (a
// GPU faults on it) is updated without atomicity.
template <class W>
uint64_t exchange_word(W* word, int shift, int n, const Instr& in, uint64_t b, uint64_t cval) {
  const W field = (W)mask_of(n) << shift;
  W seen = __atomic_load_n(word, __ATOMIC_RELAXED);
  for (;;) {
    const uint64_t old = (uint64_t)((seen & field) >> shift);
    const W next = (W)((seen & ~field) | (((W)atomic_result(in, n, old, b, cval) << shift) & field));
    if (__atomic_compare_exchange_n(word, &seen, next, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) return old;
  }
}

uint64_t atomic_apply(const Instr& in, uint8_t* p, uint64_t b, uint64_t cval) {
  const int n = type_size(in.type);
  const uintptr_t a = (uintptr_t)p;
  uint64_t old;
  if (n == 8 && a % 8 == 0) {
    old = exchange_word((uint64_t*)p, 0, 8, in, b, cval);
  } else if (n == 4 && a % 4 == 0) {
    old = exchange_word((uint32_t*)p, 0, 4, in, b, cval);
  } else if (n == 2 && a % 2 == 0) {
    old = exchange_word((uint32_t*)(a & ~uintptr_t{3}), (int)(a & 2) * 8, 2, in, b, cval);
  } else {
    old = load(p, n);
    store(p, atomic_result(in, n, old, b, cval), n);
  }
  return normalize(old, in.type);
}

uint64_t special(Context& c, Thread& t, Special s) {
  const Launch& l = *c.launch;
  uint32_t lane = t.linear % 32;
  switch (s) {
    case Special::kTidX: return t.tid[0]; case Special::kTidY: return t.tid[1]; case Special::kTidZ: return t.tid[2];
    case Special::kNtidX: return l.block[0]; case Special::kNtidY: return l.block[1]; case Special::kNtidZ: return l.block[2];
    case Special::kCtaidX: return c.ctaid[0]; case Special::kCtaidY: return c.ctaid[1]; case Special::kCtaidZ: return c.ctaid[2];
    case Special::kNctaidX: return l.grid[0]; case Special::kNctaidY: return l.grid[1]; case Special::kNctaidZ: return l.grid[2];
    case Special::kLaneid: return lane;
    case Special::kWarpid: return t.linear / 32;
    case Special::kNwarpid: return (c.threads_per_cta + 31) / 32;
    case Special::kSmid: case Special::kGridid: return 0;
    case Special::kEnvreg1: return c.grid_workspace >> 32;
    case Special::kEnvreg2: return c.grid_workspace & 0xffffffffu;
    case Special::kNsmid: return 1;
    case Special::kClock: case Special::kClock64: case Special::kGlobaltimer: return c.clock += 16;
    case Special::kLanemaskEq: return 1u << lane;
    case Special::kLanemaskLe: return (uint32_t)((2ull << lane) - 1);
    case Special::kLanemaskLt: return (1u << lane) - 1;
    case Special::kLanemaskGe: return ~((1u << lane) - 1);
    case Special::kLanemaskGt: return (uint32_t)~((2ull << lane) - 1);
    case Special::kDynamicSmemSize: return l.dynamic_shared;
  }
  return 0;
}

}  // namespace

bool trap(Context& c, const Instr& in, const std::string& why) {
  c.result.outcome = Outcome::kTrap;
  c.result.message = why + " (" + c.p->texts[in.text] + ", line " + std::to_string(in.line) + ")";
  return false;
}

uint64_t operand_value_slow(Context& c, Thread& t, const Operand& o) {
  switch (o.kind) {
    case Operand::kReg: return o.negate ? !(t.r[o.id] & 1) : t.r[o.id];
    case Operand::kImm: return (uint64_t)o.value;
    case Operand::kSpecial: return special(c, t, (Special)o.id);
    case Operand::kSym: {
      const Symbol& s = c.p->symbols[o.id];
      if (s.kind == SymbolKind::kLocal) return t.local_base + s.offset + o.value;
      if (s.kind == SymbolKind::kFuncParam) return (uint64_t)(t.pstack.data() + t.param_base + s.offset) + o.value;
      return c.sym_value[o.id] + o.value;
    }
    case Operand::kFunc: return function_address(o.id);
    default: return 0;
  }
}

namespace {
Type wide_type(Type t) {
  switch (t) {
    case Type::kS16: return Type::kS32; case Type::kU16: return Type::kU32;
    case Type::kS32: return Type::kS64; case Type::kU32: return Type::kU64;
    default: return t;
  }
}

// The full product of two integers of the instruction's type, as 128 bits.
i128 product(uint64_t a, uint64_t b, Type ty) {
  int n = type_size(ty);
  if (type_signed(ty)) return (i128)sx(a, n) * (i128)sx(b, n);
  return (i128)(u128)((u128)(a & mask_of(n)) * (b & mask_of(n)));
}

uint64_t bit_field_extract(uint64_t a, uint32_t pos, uint32_t len, Type ty) {
  int bits = type_size(ty) * 8;
  uint32_t msb = bits - 1;
  uint64_t sbit = 0;
  if (type_signed(ty) && len > 0) sbit = (a >> std::min(pos + len - 1, msb)) & 1;
  uint64_t d = 0;
  for (uint32_t i = 0; i < (uint32_t)bits; ++i) {
    uint64_t bit = (i < len && pos + i <= msb) ? (a >> (pos + i)) & 1 : sbit;
    d |= bit << i;
  }
  return d;
}

bool float_class(Mode m, double x) {
  switch (m) {
    case Mode::kFinite: return std::isfinite(x);
    case Mode::kInfinite: return std::isinf(x);
    case Mode::kNumber: return !std::isnan(x);
    case Mode::kNotANumber: return std::isnan(x);
    case Mode::kNormal: return std::isnormal(x);
    case Mode::kSubnormal: return std::fpclassify(x) == FP_SUBNORMAL;
    default: return false;
  }
}

}  // namespace

Stop run_thread(Context& c, Thread& t) {
  const Program& p = *c.p;
  const Function* f = &p.functions[t.func];
  const Instr* code = f->code.data();
  uint32_t count = (uint32_t)f->code.size();
#define V(k) operand_value(c, t, in.ops[k])
  for (;;) {
    if (t.pc >= count) goto do_ret;  // falling off the end returns
    if (code[t.pc].fast != Fast::kNone || code[t.pc].guard >= 0) {
      if (run_fast(c, t, code, count)) return Stop::kSynced;  // as far as it can; then the general path runs one
      if (t.pc >= count) goto do_ret;
    }
    {
      const Instr& in = code[t.pc];
      if (in.guard >= 0 && (bool)(t.r[in.guard] & 1) == in.guard_negate) { ++t.pc; continue; }
      const Type ty = in.type;
      const int n = type_size(ty);
      switch (in.op) {
        case Op::kNop: break;
        case Op::kMov: {
          const Operand& d = in.ops[0];
          const Operand& s = in.ops[1];
          if (d.kind == Operand::kVec || s.kind == Operand::kVec) {
            const Operand& v = d.kind == Operand::kVec ? d : s;
            int k = (int)v.value, eb = n / std::max(k, 1);
            Type et = eb == 1 ? Type::kB8 : eb == 2 ? Type::kB16 : eb == 4 ? Type::kB32 : Type::kB64;
            if (d.kind == Operand::kVec) {
              uint64_t x = V(1);
              for (int i = 0; i < k; ++i) write_reg(t, p.vector_elements[v.id + i], x >> (8 * eb * i), et);
            } else {
              uint64_t x = 0;
              for (int i = 0; i < k; ++i) x |= (operand_value(c, t, p.vector_elements[v.id + i]) & mask_of(eb)) << (8 * eb * i);
              write_reg(t, d, x, ty);
            }
          } else {
            write_reg(t, d, V(1), ty);
          }
          break;
        }
        case Op::kLd: {
          uint64_t elems = in.ops[0].kind == Operand::kVec ? (uint64_t)in.ops[0].value : 1;
          uint8_t* a = address(c, t, in, in.ops[1], (uint64_t)n * elems);
          if (!a) return Stop::kError;
          if (in.ops[0].kind == Operand::kVec) {
            for (int i = 0; i < in.ops[0].value; ++i) write_reg(t, p.vector_elements[in.ops[0].id + i], load(a + i * n, n), ty);
          } else {
            write_reg(t, in.ops[0], load(a, n), ty);
          }
          if (in.flags & kVolatile) { ++t.pc; return Stop::kYield; }
          break;
        }
        case Op::kSt: {
          uint64_t elems = in.ops[1].kind == Operand::kVec ? (uint64_t)in.ops[1].value : 1;
          uint8_t* a = address(c, t, in, in.ops[0], (uint64_t)n * elems);
          if (!a) return Stop::kError;
          if (in.ops[1].kind == Operand::kVec) {
            for (int i = 0; i < in.ops[1].value; ++i) store(a + i * n, operand_value(c, t, p.vector_elements[in.ops[1].id + i]), n);
          } else {
            store(a, V(1), n);
          }
          if (in.flags & kVolatile) { ++t.pc; return Stop::kYield; }
          break;
        }
        case Op::kAdd: case Op::kSub: {
          uint64_t a = V(1), b = V(2), r;
          bool add = in.op == Op::kAdd;
          if (type_pair(ty)) {
            r = per_half(ty, a, b, 0, in.flags & kSat, [add](float x, float y, float) { return add ? x + y : x - y; });
          } else if (type_float(ty)) {
            double x = get_float(a, ty), y = get_float(b, ty), d = add ? x + y : x - y;
            if (in.flags & kSat) d = std::isnan(d) ? 0 : std::clamp(d, 0.0, 1.0);
            r = put_float(d, ty);
          } else if (in.flags & (kCarryIn | kCarryOut)) {
            u128 x = a & mask_of(n), y = b & mask_of(n), ci = (in.flags & kCarryIn) ? t.carry : 0;
            u128 w = add ? x + y + ci : x - y - ci;
            if (in.flags & kCarryOut) t.carry = (uint64_t)(w >> (n * 8)) & 1;
            r = (uint64_t)w;
          } else if (in.flags & kSat) {
            int64_t w = add ? sx(a, 4) + sx(b, 4) : sx(a, 4) - sx(b, 4);
            r = (uint64_t)std::clamp<int64_t>(w, INT32_MIN, INT32_MAX);
          } else {
            r = add ? a + b : a - b;
          }
          write_reg(t, in.ops[0], r, ty);
          break;
        }
        case Op::kMul: case Op::kMad: {
          uint64_t a = V(1), b = V(2), r;
          if (type_pair(ty)) {  // mul only: PTX has no mad.f16x2
            write_reg(t, in.ops[0], per_half(ty, a, b, 0, in.flags & kSat, [](float x, float y, float) { return x * y; }), ty);
            break;
          } else if (type_float(ty)) {
            if (in.op == Op::kMul) r = put_float(get_float(a, ty) * get_float(b, ty), ty);
            else if (ty == Type::kF32) r = bits_f32(std::fmaf(as_f32(a), as_f32(b), as_f32(V(3))));
            else r = put_float(std::fma(get_float(a, ty), get_float(b, ty), get_float(V(3), ty)), ty);
            if (in.flags & kSat) { double d = get_float(r, ty); r = put_float(std::isnan(d) ? 0 : std::clamp(d, 0.0, 1.0), ty); }
            write_reg(t, in.ops[0], r, ty);
            break;
          }
          i128 prod = product(a, b, ty);
          Type dt = ty;
          if (in.flags & kWide) { r = (uint64_t)prod; dt = wide_type(ty); }
          else if (in.flags & kHi) r = (uint64_t)(prod >> (n * 8));
          else r = (uint64_t)prod;
          if (in.op == Op::kMad) {
            int rn = type_size(dt);
            uint64_t cv = V(3);
            if (in.flags & (kCarryIn | kCarryOut)) {
              u128 w = (u128)(r & mask_of(rn)) + (cv & mask_of(rn)) + ((in.flags & kCarryIn) ? t.carry : 0);
              if (in.flags & kCarryOut) t.carry = (uint64_t)(w >> (rn * 8)) & 1;
              r = (uint64_t)w;
            } else if (in.flags & kSat) {
              r = (uint64_t)std::clamp<int64_t>(sx(r, 4) + sx(cv, 4), INT32_MIN, INT32_MAX);
            } else {
              r += cv;
            }
          }
          write_reg(t, in.ops[0], r, dt);
          break;
        }
        case Op::kMul24: case Op::kMad24: {
          i128 prod = type_signed(ty) ? (i128)sx(V(1), 3) * sx(V(2), 3) : (i128)((V(1) & 0xffffff) * (V(2) & 0xffffff));
          uint64_t r = (in.flags & kHi) ? (uint64_t)(prod >> 16) : (uint64_t)prod;
          if (in.op == Op::kMad24) r += V(3);
          write_reg(t, in.ops[0], r, ty);
          break;
        }
        case Op::kFma: {
          if (type_pair(ty)) {
            write_reg(t, in.ops[0], per_half(ty, V(1), V(2), V(3), in.flags & kSat, [](float x, float y, float z) { return std::fmaf(x, y, z); }), ty);
            break;
          }
          uint64_t r = ty == Type::kF32 ? bits_f32(std::fmaf(as_f32(V(1)), as_f32(V(2)), as_f32(V(3))))
                                        : put_float(std::fma(get_float(V(1), ty), get_float(V(2), ty), get_float(V(3), ty)), ty);
          if (in.flags & kSat) { double d = get_float(r, ty); r = put_float(std::isnan(d) ? 0 : std::clamp(d, 0.0, 1.0), ty); }
          write_reg(t, in.ops[0], r, ty);
          break;
        }
        case Op::kDiv: case Op::kRem: {
          uint64_t a = V(1), b = V(2), r;
          if (type_float(ty)) {
            r = put_float(get_float(a, ty) / get_float(b, ty), ty);
          } else if (type_signed(ty)) {
            int64_t x = sx(a, n), y = sx(b, n);
            if (y == 0) r = in.op == Op::kDiv ? ~0ull : (uint64_t)x;
            else if (y == -1) r = in.op == Op::kDiv ? (uint64_t)(0 - (uint64_t)x) : 0;
            else r = (uint64_t)(in.op == Op::kDiv ? x / y : x % y);
          } else {
            uint64_t x = a & mask_of(n), y = b & mask_of(n);
            r = y == 0 ? (in.op == Op::kDiv ? ~0ull : x) : (in.op == Op::kDiv ? x / y : x % y);
          }
          write_reg(t, in.ops[0], r, ty);
          break;
        }
        case Op::kAbs: case Op::kNeg: {
          uint64_t a = V(1), r;
          uint64_t sign = type_pair(ty) ? 0x80008000ull : 1ull << (n * 8 - 1);
          if (type_float(ty) || type_pair(ty)) r = in.op == Op::kAbs ? (a & ~sign) : (a ^ sign);
          else r = in.op == Op::kAbs ? (uint64_t)std::llabs(sx(a, n)) : (uint64_t)(0 - a);
          write_reg(t, in.ops[0], r, ty);
          break;
        }
        case Op::kMin: case Op::kMax: {
          uint64_t a = V(1), b = V(2), r;
          bool mn = in.op == Op::kMin;
          if (type_pair(ty)) r = per_half(ty, a, b, 0, false, [mn](float x, float y, float) { return (float)(mn ? float_min(x, y) : float_max(x, y)); });
          else if (type_float(ty)) r = put_float(mn ? float_min(get_float(a, ty), get_float(b, ty)) : float_max(get_float(a, ty), get_float(b, ty)), ty);
          else if (type_signed(ty)) r = (uint64_t)(mn ? std::min(sx(a, n), sx(b, n)) : std::max(sx(a, n), sx(b, n)));
          else r = mn ? std::min(a & mask_of(n), b & mask_of(n)) : std::max(a & mask_of(n), b & mask_of(n));
          write_reg(t, in.ops[0], r, ty);
          break;
        }
        case Op::kAnd: write_reg(t, in.ops[0], V(1) & V(2), ty); break;
        case Op::kOr: write_reg(t, in.ops[0], V(1) | V(2), ty); break;
        case Op::kXor: write_reg(t, in.ops[0], V(1) ^ V(2), ty); break;
        case Op::kNot: write_reg(t, in.ops[0], ~V(1), ty); break;
        case Op::kCnot: write_reg(t, in.ops[0], (V(1) & mask_of(n)) == 0, ty); break;
        case Op::kShl: case Op::kShr: {
          uint64_t a = V(1), s = V(2) & 0xffffffffu;
          int bits = n * 8;
          uint64_t r;
          if (in.op == Op::kShl) r = s >= (uint64_t)bits ? 0 : a << s;
          else if (type_signed(ty)) r = (uint64_t)(sx(a, n) >> std::min<uint64_t>(s, 63));
          else r = s >= (uint64_t)bits ? 0 : (a & mask_of(n)) >> s;
          write_reg(t, in.ops[0], r, ty);
          break;
        }
        case Op::kShf: {
          uint64_t lo = V(1) & 0xffffffffu, hi = V(2) & 0xffffffffu, s = V(3) & 0xffffffffu;
          s = (in.flags & kClamp) ? std::min<uint64_t>(s, 32) : (s & 31);
          uint64_t both = (hi << 32) | lo;
          uint64_t r = in.mode == Mode::kLeft ? (both << s) >> 32 : (both >> s);
          write_reg(t, in.ops[0], r, Type::kB32);
          break;
        }
        case Op::kSelp: write_reg(t, in.ops[0], (V(3) & 1) ? V(1) : V(2), ty); break;
        case Op::kSlct: {
          uint64_t cv = V(3);
          bool ge = in.type2 == Type::kF32 ? as_f32(cv) >= 0.0f : sx(cv, 4) >= 0;
          write_reg(t, in.ops[0], ge ? V(1) : V(2), ty);
          break;
        }
        case Op::kSetp: case Op::kSet: {
          bool setp = in.op == Op::kSetp;
          Type ct = setp ? ty : in.type2;
          const Operand& ao = in.ops[setp ? 2 : 1];
          const Operand& bo = in.ops[setp ? 3 : 2];
          const Operand& co = in.ops[setp ? 4 : 3];
          bool r = compare(in.cmp, operand_value(c, t, ao), operand_value(c, t, bo), ct), q = !r;
          if (in.bool_op != BoolOp::kNone) {
            bool cv = operand_value(c, t, co) & 1;
            auto comb = [&](bool x) { return in.bool_op == BoolOp::kAnd ? (x && cv) : in.bool_op == BoolOp::kOr ? (x || cv) : (x != cv); };
            r = comb(r); q = comb(q);
          }
          if (setp) {
            write_reg(t, in.ops[0], r, Type::kPred);
            write_reg(t, in.ops[1], q, Type::kPred);
          } else {
            write_reg(t, in.ops[0], ty == Type::kF32 ? (r ? bits_f32(1.0f) : 0) : (r ? ~0ull : 0), ty);
          }
          break;
        }
        case Op::kCvt:
          if (type_pair(ty)) {  // cvt.rn.{b}f16x2.f32 d, a, b: a to the upper half, b to the lower
            const Type lane = ty == Type::kBF16x2 ? Type::kBF16 : Type::kF16;
            write_reg(t, in.ops[0], put_float(as_f32(V(1)), lane) << 16 | put_float(as_f32(V(2)), lane), ty);
            break;
          }
          write_reg(t, in.ops[0], convert(in, V(1)), ty);
          break;
        case Op::kCvta: {
          uint64_t a = V(1);
          if (in.space == Space::kShared) {
            uint64_t base = (uint64_t)c.shared_mem.data();
            a = (in.flags & kTo) ? a - base : a + base;
          } else if (in.space == Space::kLocal) {
            uint64_t base = (uint64_t)t.local;
            a = (in.flags & kTo) ? a - base : a + base;
          }
          write_reg(t, in.ops[0], a, ty);
          break;
        }
        case Op::kSqrt: case Op::kRsqrt: case Op::kRcp: case Op::kEx2: case Op::kLg2: case Op::kSin: case Op::kCos: case Op::kTanh: {
          double x = get_float(V(1), ty), d = 0;
          bool f32 = ty == Type::kF32;
          switch (in.op) {
            case Op::kSqrt: d = std::sqrt(x); break;
            case Op::kRsqrt: d = 1.0 / std::sqrt(x); break;
            case Op::kRcp: d = 1.0 / x; break;
            case Op::kEx2: d = f32 ? ::exp2f((float)x) : std::exp2(x); break;
            case Op::kLg2: d = f32 ? ::log2f((float)x) : std::log2(x); break;
            case Op::kSin: d = f32 ? ::sinf((float)x) : std::sin(x); break;
            case Op::kCos: d = f32 ? ::cosf((float)x) : std::cos(x); break;
            default: d = f32 ? ::tanhf((float)x) : std::tanh(x); break;
          }
          write_reg(t, in.ops[0], put_float(d, ty), ty);
          break;
        }
        case Op::kCpAsync: {
          // Copied at once (so the group's wait finds it done): cp-size bytes, of which the
          // first src-size come from global memory and the rest are zero; ignore-src: all zero.
          const uint64_t size = (uint64_t)in.ops[2].value;
          uint64_t from = size;
          if (in.num_operands - ((in.flags & kCacheHint) ? 1 : 0) == 4) {
            from = (in.flags & kIgnoreSrc) ? ((V(3) & 1) ? 0 : size) : std::min<uint64_t>(V(3) & 0xffffffffu, size);
          }
          uint8_t* dst = address_in(c, t, in, in.ops[0], size, Space::kShared);
          if (!dst) return Stop::kError;
          if (from > 0) {
            const uint8_t* src = address_in(c, t, in, in.ops[1], from, Space::kGlobal);
            if (!src) return Stop::kError;
            memcpy(dst, src, from);
          }
          memset(dst + from, 0, size - from);
          break;
        }
        case Op::kCopysign: write_reg(t, in.ops[0], put_float(std::copysign(get_float(V(2), ty), get_float(V(1), ty)), ty), ty); break;
        case Op::kDp4a: case Op::kDp2a: {  // integer dot products of packed bytes (and halves)
          const uint32_t a = (uint32_t)V(1), b = (uint32_t)V(2);
          const bool sa = type_signed(ty), sb = type_signed(in.type2);
          auto byte = [](uint32_t v, int k, bool s) { return s ? (int64_t)(int8_t)(v >> (8 * k)) : (int64_t)(uint8_t)(v >> (8 * k)); };
          auto half = [](uint32_t v, int k, bool s) { return s ? (int64_t)(int16_t)(v >> (16 * k)) : (int64_t)(uint16_t)(v >> (16 * k)); };
          int64_t sum = 0;
          if (in.op == Op::kDp4a) {
            for (int k = 0; k < 4; ++k) sum += byte(a, k, sa) * byte(b, k, sb);
          } else {
            const int first = (in.flags & kHi) ? 2 : 0;  // .hi: b's upper two bytes
            for (int k = 0; k < 2; ++k) sum += half(a, k, sa) * byte(b, first + k, sb);
          }
          write_reg(t, in.ops[0], (uint64_t)(uint32_t)(sum + (int64_t)(uint32_t)V(3)), Type::kB32);
          break;
        }
        case Op::kPopc: write_reg(t, in.ops[0], (uint64_t)std::popcount(V(1) & mask_of(n)), Type::kU32); break;
        case Op::kClz: {
          uint64_t a = V(1) & mask_of(n);
          write_reg(t, in.ops[0], (uint64_t)(std::countl_zero(a) - (64 - n * 8)), Type::kU32);
          break;
        }
        case Op::kBrev: {
          uint64_t a = V(1), r = 0;
          for (int i = 0; i < n * 8; ++i) r |= ((a >> i) & 1) << (n * 8 - 1 - i);
          write_reg(t, in.ops[0], r, ty);
          break;
        }
        case Op::kBfe: write_reg(t, in.ops[0], bit_field_extract(V(1), (uint32_t)(V(2) & 0xff), (uint32_t)(V(3) & 0xff), ty), ty); break;
        case Op::kBfi: {
          uint64_t a = V(1), r = V(2);
          uint32_t pos = (uint32_t)(V(3) & 0xff), len = (uint32_t)(V(4) & 0xff), bits = n * 8;
          for (uint32_t i = 0; i < len && pos + i < bits; ++i) r = (r & ~(1ull << (pos + i))) | (((a >> i) & 1) << (pos + i));
          write_reg(t, in.ops[0], r, ty);
          break;
        }
        case Op::kPrmt: {
          uint64_t bytes = (V(1) & 0xffffffffu) | ((V(2) & 0xffffffffu) << 32), sel = V(3), r = 0;
          for (int i = 0; i < 4; ++i) {
            uint32_t s = (sel >> (4 * i)) & 0xf;
            uint64_t b = (bytes >> (8 * (s & 7))) & 0xff;
            if (s & 8) b = (b & 0x80) ? 0xff : 0;
            r |= b << (8 * i);
          }
          write_reg(t, in.ops[0], r, Type::kB32);
          break;
        }
        case Op::kBfind: {
          uint64_t a = V(1) & mask_of(n);
          if (type_signed(ty) && sx(a, n) < 0) a = ~a & mask_of(n);
          uint64_t pos = (uint64_t)(63 - std::countl_zero(a));
          if (in.flags & kShiftAmt) pos = (uint64_t)(n * 8 - 1) - pos;
          write_reg(t, in.ops[0], a == 0 ? 0xffffffffu : pos, Type::kU32);
          break;
        }
        case Op::kLop3: {
          uint64_t a = V(1), b = V(2), cv = V(3), lut = V(4), r = 0;
          for (int i = 0; i < 8; ++i)
            if ((lut >> i) & 1) r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? cv : ~cv);
          write_reg(t, in.ops[0], r, Type::kB32);
          break;
        }
        case Op::kTestp: write_reg(t, in.ops[0], float_class(in.mode, get_float(V(1), ty)), Type::kPred); break;
        case Op::kAtom: case Op::kRed: {
          bool atom = in.op == Op::kAtom;
          const Operand& ao = in.ops[atom ? 1 : 0];
          uint8_t* a = address(c, t, in, ao, n);
          if (!a) return Stop::kError;
          uint64_t old = atomic_apply(in, a, operand_value(c, t, in.ops[atom ? 2 : 1]), atom ? V(3) : 0);
          if (atom) write_reg(t, in.ops[0], old, ty);
          break;
        }
        case Op::kBra:
          // A loop's branch spends the CTA's slice: a cooperative grid's CTA that spins on
          // its grid barrier yields to the others (the budget is unbounded otherwise).
          if ((uint32_t)in.target <= t.pc && --c.branch_budget == 0) {
            t.pc = (uint32_t)in.target;
            return Stop::kYield;
          }
          t.pc = (uint32_t)in.target;
          continue;
        case Op::kRet: goto do_ret;
        case Op::kExit: t.state = ThreadState::kExited; return Stop::kExit;
        case Op::kCall: {
          const Function& callee = p.functions[in.ops[1].id];
          if (!callee.has_body) {
            if (!builtin_call(c, t, in, callee)) return Stop::kError;
            break;
          }
          if (t.frames.size() >= kMaxCallDepth) { trap(c, in, "call depth limit exceeded"); return Stop::kError; }
          uint32_t reg_base = t.reg_base + f->num_regs;
          uint32_t param_base = t.param_base + (uint32_t)((f->param_area_size + 15) & ~15ull);
          uint64_t local_base = t.local_base + ((f->local_size + 15) & ~15ull);
          if (local_base + callee.local_size > c.local_per_thread) { trap(c, in, "local memory stack overflow"); return Stop::kError; }
          if (t.regs.size() < reg_base + callee.num_regs) t.regs.resize(reg_base + callee.num_regs);
          if (t.pstack.size() < param_base + callee.param_area_size) t.pstack.resize(param_base + callee.param_area_size);
          for (size_t i = 0; i < callee.params.size() && (int64_t)i < in.ops[2].value; ++i) {
            const Symbol& from = p.symbols[p.vector_elements[in.ops[2].id + i].id];
            const Symbol& to = p.symbols[callee.params[i]];
            memcpy(param_slot(t, to, param_base), param_slot(t, from, t.param_base), std::min(from.size, to.size));
          }
          t.frames.push_back(Frame{t.func, t.pc + 1, t.reg_base, t.param_base, t.local_base});
          t.func = in.ops[1].id;
          t.pc = 0;
          t.reg_base = reg_base;
          t.param_base = param_base;
          t.local_base = local_base;
          t.r = t.regs.data() + reg_base;
          f = &callee;
          code = f->code.data();
          count = (uint32_t)f->code.size();
          continue;
        }
        case Op::kBar: return Stop::kBarrier;  // left at t.pc: the release steps over it
        case Op::kTrap: trap(c, in, "trap"); return Stop::kError;
        case Op::kTex: case Op::kSuld: case Op::kSust:
          if (!texture_instruction(c, t, in)) return Stop::kError;
          break;
        case Op::kMbarrier:
          switch (mbarrier_instruction(c, t, in)) {
            case Barrier::kDone: break;
            case Barrier::kWaiting: ++t.pc; return Stop::kYield;  // the others run, then it tests again
            case Barrier::kFailed: return Stop::kError;
          }
          break;
        case Op::kShfl: case Op::kVote: case Op::kActivemask: case Op::kWarpSync: case Op::kMatch: case Op::kRedux:
        case Op::kWmma:
          return Stop::kCollective;
        case Op::kUnsupported:
          c.result.outcome = Outcome::kUnsupported;
          c.result.message = "unsupported instruction " + p.texts[in.text];
          return Stop::kError;
      }
      ++t.pc;
      continue;
    }
  do_ret:
    if (t.frames.empty()) { t.state = ThreadState::kExited; return Stop::kExit; }
    {
      Frame fr = t.frames.back();
      t.frames.pop_back();
      const Function& caller = p.functions[fr.func];
      const Instr& call = caller.code[fr.pc - 1];
      if (call.ops[0].kind == Operand::kSym && !f->retvals.empty()) {
        const Symbol& from = p.symbols[f->retvals[0]];
        const Symbol& to = p.symbols[call.ops[0].id];
        memcpy(param_slot(t, to, fr.param_base), param_slot(t, from, t.param_base), std::min(from.size, to.size));
      }
      t.func = fr.func;
      t.pc = fr.pc;
      t.reg_base = fr.reg_base;
      t.param_base = fr.param_base;
      t.local_base = fr.local_base;
      t.r = t.regs.data() + t.reg_base;
      f = &caller;
      code = f->code.data();
      count = (uint32_t)f->code.size();
    }
  }
#undef V
}

}  // namespace vgpu::executor::sim::ptx
