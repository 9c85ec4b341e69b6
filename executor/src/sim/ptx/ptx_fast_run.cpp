// Runs the specialized instruction forms (ptx_fast.h) as threaded code: each form's handler ends
// by fetching the next instruction and jumping to its handler through a jump of its own (GCC's
// labels as values), instead of returning to one shared switch whose single indirect jump the
// branch predictor cannot learn. The results are exactly the general path's (ptx_ops.cpp);
// tests/unit/sim_ptx/ptx_fast_forms_test.cpp compares the two on every form.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include "ptx_fast.h"
#include "ptx_values.h"

// Labels as values are GCC's (and Clang's) extension to C++.
#pragma GCC diagnostic ignored "-Wpedantic"

namespace vgpu::executor::sim::ptx {

void run_fast(Context& c, Thread& t, const Instr* code, uint32_t count) {
#define VGPU_PTX_FAST_LABEL(name) &&form_##name,
  static const void* const kHandlers[] = {VGPU_PTX_FAST_FORMS(VGPU_PTX_FAST_LABEL)};
#undef VGPU_PTX_FAST_LABEL
  static_assert(sizeof kHandlers / sizeof kHandlers[0] == static_cast<size_t>(Fast::kCount));

  uint64_t* const r = t.r;
  uint32_t pc = t.pc;
  const Instr* in;
  uint32_t d;

// Fetches the instruction at pc: skipped if its guard is false, else to its form's handler.
#define DISPATCH()                                                                  \
  do {                                                                              \
    for (;;) {                                                                      \
      if (pc >= count) goto done;                                                   \
      in = code + pc;                                                               \
      if (in->guard < 0 || (bool)(r[in->guard] & 1) != in->guard_negate) break;     \
      ++pc;                                                                         \
    }                                                                               \
    d = in->ops[0].id;                                                              \
    goto* kHandlers[static_cast<uint8_t>(in->fast)];                                \
  } while (0)
#define NEXT() \
  do {         \
    ++pc;      \
    DISPATCH(); \
  } while (0)
#define FORM(name) form_##name:
#define A r[in->ops[1].id]
#define B r[in->ops[2].id]
#define C r[in->ops[3].id]
#define IMM ((uint64_t)in->ops[2].value)
#define VAL(k) (in->ops[k].kind == Operand::kImm ? (uint64_t)in->ops[k].value : r[in->ops[k].id])
#define S32(x) ((uint64_t)(int64_t)(int32_t)(uint32_t)(x))
#define U32(x) ((uint64_t)(uint32_t)(x))

  DISPATCH();

  FORM(kNone) goto done;  // the general path runs it
  FORM(kAddS32R) r[d] = S32(A + B); NEXT();
  FORM(kAddS32I) r[d] = S32(A + IMM); NEXT();
  FORM(kAddU32R) r[d] = U32(A + B); NEXT();
  FORM(kAddU32I) r[d] = U32(A + IMM); NEXT();
  FORM(kSubS32R) r[d] = S32(A - B); NEXT();
  FORM(kSubS32I) r[d] = S32(A - IMM); NEXT();
  FORM(kSubU32R) r[d] = U32(A - B); NEXT();
  FORM(kSubU32I) r[d] = U32(A - IMM); NEXT();
  FORM(kMulLoS32R) r[d] = S32(A * B); NEXT();
  FORM(kMulLoS32I) r[d] = S32(A * IMM); NEXT();
  FORM(kMulLoU32R) r[d] = U32(A * B); NEXT();
  FORM(kMulLoU32I) r[d] = U32(A * IMM); NEXT();
  FORM(kMadLoS32) r[d] = S32(A * B + C); NEXT();
  FORM(kMadLoU32) r[d] = U32(A * B + C); NEXT();
  FORM(kMulWideS32R) r[d] = (uint64_t)((int64_t)(int32_t)A * (int64_t)(int32_t)B); NEXT();
  FORM(kMulWideS32I) r[d] = (uint64_t)((int64_t)(int32_t)A * (int64_t)(int32_t)IMM); NEXT();
  FORM(kMulWideU32R) r[d] = (uint64_t)(uint32_t)A * (uint32_t)B; NEXT();
  FORM(kMulWideU32I) r[d] = (uint64_t)(uint32_t)A * (uint32_t)IMM; NEXT();
  // Immediate shifts are below the width (ptx_fast.cpp); register ones clamp as PTX does.
  FORM(kShlU32I) r[d] = U32(A << IMM); NEXT();
  FORM(kShrU32I) r[d] = (uint32_t)A >> IMM; NEXT();
  FORM(kShrS32I) r[d] = S32((int32_t)A >> IMM); NEXT();
  FORM(kShlU32R) { const uint32_t s = (uint32_t)B; r[d] = s >= 32 ? 0 : U32(A << s); } NEXT();
  FORM(kShrU32R) { const uint32_t s = (uint32_t)B; r[d] = s >= 32 ? 0 : (uint32_t)A >> s; } NEXT();
  FORM(kShrS32R) { const uint32_t s = (uint32_t)B; r[d] = S32((int32_t)A >> (s >= 32 ? 31 : s)); } NEXT();
  FORM(kAndU32R) r[d] = U32(A & B); NEXT();
  FORM(kAndU32I) r[d] = U32(A & IMM); NEXT();
  FORM(kOrU32R) r[d] = U32(A | B); NEXT();
  FORM(kOrU32I) r[d] = U32(A | IMM); NEXT();
  FORM(kXorU32R) r[d] = U32(A ^ B); NEXT();
  FORM(kXorU32I) r[d] = U32(A ^ IMM); NEXT();
  FORM(kAdd64R) r[d] = A + B; NEXT();
  FORM(kAdd64I) r[d] = A + IMM; NEXT();
  FORM(kSub64R) r[d] = A - B; NEXT();
  FORM(kSub64I) r[d] = A - IMM; NEXT();
  FORM(kMulLo64R) r[d] = A * B; NEXT();
  FORM(kMulLo64I) r[d] = A * IMM; NEXT();
  FORM(kShl64I) r[d] = A << IMM; NEXT();
  FORM(kAnd64I) r[d] = A & IMM; NEXT();
  FORM(kMov32U) r[d] = U32(A); NEXT();
  FORM(kMov32S) r[d] = S32(A); NEXT();
  FORM(kMov64) r[d] = A; NEXT();
  FORM(kMovI) r[d] = (uint64_t)in->ops[1].value; NEXT();
  FORM(kMovTidX) r[d] = t.tid[0]; NEXT();
  FORM(kMovTidY) r[d] = t.tid[1]; NEXT();
  FORM(kMovNtidX) r[d] = c.launch->block[0]; NEXT();
  FORM(kMovNtidY) r[d] = c.launch->block[1]; NEXT();
  FORM(kMovCtaidX) r[d] = c.ctaid[0]; NEXT();
  FORM(kMovCtaidY) r[d] = c.ctaid[1]; NEXT();
// The outcome (less, equal, greater, unordered) picks the predicate from Instr::fast_arg; the
// second destination, if any, gets its negation.
#define SETP(a, b)                                                 \
  {                                                                \
    const auto x = (a), y = (b);                                   \
    const int outcome = x < y ? 0 : x == y ? 1 : x > y ? 2 : 3;    \
    const uint64_t p = (in->fast_arg >> outcome) & 1;              \
    r[d] = p;                                                      \
    if (in->ops[1].kind == Operand::kReg) r[in->ops[1].id] = p ^ 1; \
  }                                                                \
  NEXT();
  FORM(kSetpS32R) SETP((int32_t)B, (int32_t)C)
  FORM(kSetpS32I) SETP((int32_t)B, (int32_t)in->ops[3].value)
  FORM(kSetpU32R) SETP((uint32_t)B, (uint32_t)C)
  FORM(kSetpU32I) SETP((uint32_t)B, (uint32_t)in->ops[3].value)
  FORM(kSetpS64R) SETP((int64_t)B, (int64_t)C)
  FORM(kSetpS64I) SETP((int64_t)B, (int64_t)in->ops[3].value)
  FORM(kSetpU64R) SETP(B, C)
  FORM(kSetpU64I) SETP(B, (uint64_t)in->ops[3].value)
  FORM(kSetpF32R) SETP(as_f32(B), as_f32(C))
  FORM(kSetpF32I) SETP(as_f32(B), as_f32((uint64_t)in->ops[3].value))
  FORM(kAndPred) r[d] = A & B & 1; NEXT();
  FORM(kOrPred) r[d] = (A | B) & 1; NEXT();
  FORM(kXorPred) r[d] = (A ^ B) & 1; NEXT();
  // An f32 sum, difference or product of two floats, rounded once to float, is the general
  // path's (computed in double, then rounded to float): double holds them closely enough that
  // the second rounding changes nothing.
  FORM(kAddF32R) r[d] = bits_f32(as_f32(A) + as_f32(B)); NEXT();
  FORM(kAddF32I) r[d] = bits_f32(as_f32(A) + as_f32(IMM)); NEXT();
  FORM(kSubF32R) r[d] = bits_f32(as_f32(A) - as_f32(B)); NEXT();
  FORM(kSubF32I) r[d] = bits_f32(as_f32(A) - as_f32(IMM)); NEXT();
  FORM(kMulF32R) r[d] = bits_f32(as_f32(A) * as_f32(B)); NEXT();
  FORM(kMulF32I) r[d] = bits_f32(as_f32(A) * as_f32(IMM)); NEXT();
  FORM(kFmaF32) r[d] = bits_f32(std::fmaf(as_f32(A), as_f32(B), as_f32(C))); NEXT();
  // Memory: an address the general path would trap on is left to it, so the fault reads the same.
  FORM(kLdGlobalU32) FORM(kLdGlobalS32) FORM(kLdGlobal64) {
    const uint64_t a = A + (uint64_t)in->ops[1].value;
    if (a < kNullPage) goto done;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(a);
    if (in->fast == Fast::kLdGlobal64) { uint64_t v; memcpy(&v, p, 8); r[d] = v; }
    else { uint32_t v; memcpy(&v, p, 4); r[d] = in->fast == Fast::kLdGlobalS32 ? S32(v) : v; }
  }
  NEXT();
  FORM(kLdSharedU32) FORM(kLdSharedS32) FORM(kLdShared64) {
    const uint64_t a = A + (uint64_t)in->ops[1].value;
    const uint64_t n = in->fast == Fast::kLdShared64 ? 8 : 4;
    if (a + n > c.shared_size || a + n < a) goto done;
    const uint8_t* p = c.shared_mem.data() + a;
    if (n == 8) { uint64_t v; memcpy(&v, p, 8); r[d] = v; }
    else { uint32_t v; memcpy(&v, p, 4); r[d] = in->fast == Fast::kLdSharedS32 ? S32(v) : v; }
  }
  NEXT();
  FORM(kStGlobal32) FORM(kStGlobal64) {
    const uint64_t a = r[in->ops[0].id] + (uint64_t)in->ops[0].value;
    if (a < kNullPage) goto done;
    uint8_t* p = reinterpret_cast<uint8_t*>(a);
    const uint64_t v = A;
    if (in->fast == Fast::kStGlobal64) memcpy(p, &v, 8);
    else { const uint32_t w = (uint32_t)v; memcpy(p, &w, 4); }
  }
  NEXT();
  FORM(kStShared32) FORM(kStShared64) {
    const uint64_t a = r[in->ops[0].id] + (uint64_t)in->ops[0].value;
    const uint64_t n = in->fast == Fast::kStShared64 ? 8 : 4;
    if (a + n > c.shared_size || a + n < a) goto done;
    uint8_t* p = c.shared_mem.data() + a;
    const uint64_t v = A;
    if (n == 8) memcpy(p, &v, 8);
    else { const uint32_t w = (uint32_t)v; memcpy(p, &w, 4); }
  }
  NEXT();
  FORM(kLdParamU32) FORM(kLdParamS32) FORM(kLdParam64) {
    const uint64_t off = c.p->symbols[in->ops[1].id].offset + (uint64_t)in->ops[1].value;
    const uint64_t n = in->fast == Fast::kLdParam64 ? 8 : 4;
    if (off + n > c.params.size() || off + n < off) goto done;
    const uint8_t* p = c.params.data() + off;
    if (n == 8) { uint64_t v; memcpy(&v, p, 8); r[d] = v; }
    else { uint32_t v; memcpy(&v, p, 4); r[d] = in->fast == Fast::kLdParamS32 ? S32(v) : v; }
  }
  NEXT();
  FORM(kLdGlobalU8) {
    const uint64_t a = A + (uint64_t)in->ops[1].value;
    if (a < kNullPage) goto done;
    r[d] = *reinterpret_cast<const uint8_t*>(a);
  }
  NEXT();
  FORM(kStGlobal8) {
    const uint64_t a = r[in->ops[0].id] + (uint64_t)in->ops[0].value;
    if (a < kNullPage) goto done;
    *reinterpret_cast<uint8_t*>(a) = (uint8_t)A;
  }
  NEXT();
  FORM(kNegF32) r[d] = U32(A ^ 0x80000000u); NEXT();
  FORM(kAbsF32) r[d] = U32(A & 0x7fffffffu); NEXT();
  FORM(kAddF64R) r[d] = bits_f64(as_f64(A) + as_f64(B)); NEXT();
  FORM(kAddF64I) r[d] = bits_f64(as_f64(A) + as_f64(IMM)); NEXT();
  FORM(kSubF64R) r[d] = bits_f64(as_f64(A) - as_f64(B)); NEXT();
  FORM(kSubF64I) r[d] = bits_f64(as_f64(A) - as_f64(IMM)); NEXT();
  FORM(kMulF64R) r[d] = bits_f64(as_f64(A) * as_f64(B)); NEXT();
  FORM(kMulF64I) r[d] = bits_f64(as_f64(A) * as_f64(IMM)); NEXT();
  FORM(kFmaF64) r[d] = bits_f64(std::fma(as_f64(A), as_f64(B), as_f64(C))); NEXT();
  FORM(kDivF64) r[d] = bits_f64(as_f64(A) / as_f64(B)); NEXT();
  FORM(kSetpF64R) SETP(as_f64(B), as_f64(C))
  FORM(kSetpF64I) SETP(as_f64(B), as_f64((uint64_t)in->ops[3].value))
  FORM(kCvtF64F32) r[d] = bits_f64((double)as_f32(A)); NEXT();
  FORM(kCvtF32F64) r[d] = bits_f32((float)as_f64(A)); NEXT();
  // Vectors: the elements' registers are in the program's vector_elements.
  FORM(kLdGlobalVec32) FORM(kLdGlobalVec64) FORM(kLdSharedVec32) FORM(kLdSharedVec64) {
    const bool wide = in->fast == Fast::kLdGlobalVec64 || in->fast == Fast::kLdSharedVec64;
    const uint64_t n = wide ? 8 : 4, bytes = n * in->vec;
    const uint64_t a = A + (uint64_t)in->ops[1].value;
    const uint8_t* p;
    if (in->fast == Fast::kLdGlobalVec32 || in->fast == Fast::kLdGlobalVec64) {
      if (a < kNullPage) goto done;
      p = reinterpret_cast<const uint8_t*>(a);
    } else {
      if (a + bytes > c.shared_size || a + bytes < a) goto done;
      p = c.shared_mem.data() + a;
    }
    const Operand* e = &c.p->vector_elements[in->ops[0].id];
    for (uint32_t i = 0; i < in->vec; ++i) {
      if (wide) { uint64_t v; memcpy(&v, p + 8 * i, 8); r[e[i].id] = v; }
      else { uint32_t v; memcpy(&v, p + 4 * i, 4); r[e[i].id] = v; }
    }
  }
  NEXT();
  FORM(kStGlobalVec32) FORM(kStGlobalVec64) FORM(kStSharedVec32) FORM(kStSharedVec64) {
    const bool wide = in->fast == Fast::kStGlobalVec64 || in->fast == Fast::kStSharedVec64;
    const uint64_t n = wide ? 8 : 4, bytes = n * in->vec;
    const uint64_t a = r[in->ops[0].id] + (uint64_t)in->ops[0].value;
    uint8_t* p;
    if (in->fast == Fast::kStGlobalVec32 || in->fast == Fast::kStGlobalVec64) {
      if (a < kNullPage) goto done;
      p = reinterpret_cast<uint8_t*>(a);
    } else {
      if (a + bytes > c.shared_size || a + bytes < a) goto done;
      p = c.shared_mem.data() + a;
    }
    const Operand* e = &c.p->vector_elements[in->ops[1].id];
    for (uint32_t i = 0; i < in->vec; ++i) {
      const uint64_t v = r[e[i].id];
      if (wide) memcpy(p + 8 * i, &v, 8);
      else { const uint32_t w = (uint32_t)v; memcpy(p + 4 * i, &w, 4); }
    }
  }
  NEXT();
  // Conversions as ptx_convert.cpp computes them (through a 64-bit integer, or in double).
  FORM(kCvtF32S32) r[d] = bits_f32((float)(int64_t)(int32_t)A); NEXT();
  FORM(kCvtF32U32) r[d] = bits_f32((float)(uint64_t)(uint32_t)A); NEXT();
  FORM(kCvtS32F32Rzi) {
    const double x = std::trunc((double)as_f32(A));
    const int32_t v = x != x ? 0 : x <= -2147483648.0 ? INT32_MIN : x >= 2147483647.0 ? INT32_MAX : (int32_t)(int64_t)x;
    r[d] = S32(v);
  }
  NEXT();
  FORM(kSelpU32) r[d] = U32((C & 1) ? VAL(1) : VAL(2)); NEXT();
  FORM(kSelpS32) r[d] = S32((C & 1) ? VAL(1) : VAL(2)); NEXT();
  FORM(kSelp64) r[d] = (C & 1) ? VAL(1) : VAL(2); NEXT();
  FORM(kMinS32) r[d] = S32(std::min((int32_t)A, (int32_t)VAL(2))); NEXT();
  FORM(kMaxS32) r[d] = S32(std::max((int32_t)A, (int32_t)VAL(2))); NEXT();
  FORM(kMinU32) r[d] = std::min((uint32_t)A, (uint32_t)VAL(2)); NEXT();
  FORM(kMaxU32) r[d] = std::max((uint32_t)A, (uint32_t)VAL(2)); NEXT();
  FORM(kMinF32) r[d] = bits_f32((float)float_min(as_f32(A), as_f32(VAL(2)))); NEXT();
  FORM(kMaxF32) r[d] = bits_f32((float)float_max(as_f32(A), as_f32(VAL(2)))); NEXT();
  FORM(kDivF32) r[d] = bits_f32((float)((double)as_f32(A) / (double)as_f32(B))); NEXT();
  FORM(kSqrtF32) r[d] = bits_f32((float)std::sqrt((double)as_f32(A))); NEXT();
  FORM(kRsqrtF32) r[d] = bits_f32((float)(1.0 / std::sqrt((double)as_f32(A)))); NEXT();
  FORM(kRcpF32) r[d] = bits_f32((float)(1.0 / (double)as_f32(A))); NEXT();
  // Atomic adds, as atomic_apply (ptx_ops.cpp) makes them: sequentially consistent, on the
  // aligned word; a misaligned or trapping address is the general path's.
  FORM(kAtomAddU32) FORM(kAtomAddS32) FORM(kAtomAdd64) FORM(kAtomAddF32) FORM(kRedAdd32) FORM(kRedAdd64)
  FORM(kRedAddF32) {
    const bool atom = in->op == Op::kAtom;
    const Operand& m = in->ops[atom ? 1 : 0];
    const uint64_t b = VAL(atom ? 2 : 1);
    const bool wide = in->fast == Fast::kAtomAdd64 || in->fast == Fast::kRedAdd64;
    const uint64_t n = wide ? 8 : 4;
    const uint64_t a = r[m.id] + (uint64_t)m.value;
    uint8_t* p;
    if (in->space == Space::kShared) {
      if (a + n > c.shared_size || a + n < a) goto done;
      p = c.shared_mem.data() + a;
    } else {
      if (a < kNullPage) goto done;
      p = reinterpret_cast<uint8_t*>(a);
    }
    if (reinterpret_cast<uintptr_t>(p) % n != 0) goto done;
    uint64_t old;
    if (wide) {
      old = __atomic_fetch_add(reinterpret_cast<uint64_t*>(p), b, __ATOMIC_SEQ_CST);
    } else if (in->fast == Fast::kAtomAddF32 || in->fast == Fast::kRedAddF32) {
      uint32_t* w = reinterpret_cast<uint32_t*>(p);
      uint32_t seen = __atomic_load_n(w, __ATOMIC_RELAXED);
      while (!__atomic_compare_exchange_n(w, &seen, (uint32_t)bits_f32(as_f32(seen) + as_f32(b)), true, __ATOMIC_SEQ_CST,
                                          __ATOMIC_RELAXED)) {
      }
      old = seen;
    } else {
      old = __atomic_fetch_add(reinterpret_cast<uint32_t*>(p), (uint32_t)b, __ATOMIC_SEQ_CST);
    }
    if (atom) r[d] = in->fast == Fast::kAtomAddS32 ? S32(old) : old;
  }
  NEXT();
  FORM(kBra) {
    const uint32_t to = (uint32_t)in->target;
    if (to <= pc) {  // a loop's branch spends the CTA's slice; the last one yields (general path)
      if (c.branch_budget == 1) goto done;
      --c.branch_budget;
    }
    pc = to;
  }
  DISPATCH();

done:
  t.pc = pc;
#undef DISPATCH
#undef SETP
#undef NEXT
#undef FORM
#undef A
#undef B
#undef C
#undef IMM
#undef VAL
#undef S32
#undef U32
}

}  // namespace vgpu::executor::sim::ptx
