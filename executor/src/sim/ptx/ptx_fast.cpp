// Chooses each instruction's specialized form (Fast, in ptx_program.h) once, after parsing. A form
// is chosen only where running it gives exactly what the general path would: same register
// normalization, no modifier it would ignore, and a fall back to the general path wherever that
// one traps (an address out of range) or yields (a branch that spends its CTA's slice).
#include "ptx_fast.h"

namespace vgpu::executor::sim::ptx {
namespace {

bool reg(const Operand& o) { return o.kind == Operand::kReg && !o.negate; }
bool imm(const Operand& o) { return o.kind == Operand::kImm; }

bool is_s32(Type t) { return t == Type::kS32; }
bool is_u32(Type t) { return t == Type::kU32 || t == Type::kB32; }
bool is_64(Type t) { return t == Type::kS64 || t == Type::kU64 || t == Type::kB64; }

// The form for a binary operation d = a OP b whose b is a register or an immediate; kNone if
// neither. `r` and `i` are the two forms, adjacent in the enum.
Fast binary(const Instr& in, Fast r, Fast i) {
  if (!reg(in.ops[0]) || !reg(in.ops[1])) return Fast::kNone;
  if (reg(in.ops[2])) return r;
  if (imm(in.ops[2])) return i;
  return Fast::kNone;
}

// Which outcome of a comparison makes the predicate true (bit 0 less, 1 equal, 2 greater, 3
// unordered); 0 for a comparison without a form.
uint8_t outcome_mask(Cmp c, bool is_float) {
  switch (c) {
    case Cmp::kEq: return 0b0010;
    case Cmp::kNe: return 0b0101;
    case Cmp::kLt: case Cmp::kLo: return 0b0001;
    case Cmp::kLe: case Cmp::kLs: return 0b0011;
    case Cmp::kGt: case Cmp::kHi: return 0b0100;
    case Cmp::kGe: case Cmp::kHs: return 0b0110;
    default: break;
  }
  if (!is_float) return 0;
  switch (c) {
    case Cmp::kEqu: return 0b1010;
    case Cmp::kNeu: return 0b1101;
    case Cmp::kLtu: return 0b1001;
    case Cmp::kLeu: return 0b1011;
    case Cmp::kGtu: return 0b1100;
    case Cmp::kGeu: return 0b1110;
    case Cmp::kNum: return 0b0111;
    case Cmp::kNan: return 0b1000;
    default: return 0;
  }
}

Fast setp_form(Instr& in) {
  if (in.bool_op != BoolOp::kNone || !reg(in.ops[0]) || !reg(in.ops[2])) return Fast::kNone;
  if (in.ops[1].kind != Operand::kReg && in.ops[1].kind != Operand::kNone && in.ops[1].kind != Operand::kSink)
    return Fast::kNone;
  const bool b_reg = reg(in.ops[3]);
  if (!b_reg && !imm(in.ops[3])) return Fast::kNone;
  const Type ty = in.type;
  const uint8_t mask = outcome_mask(in.cmp, ty == Type::kF32 || ty == Type::kF64);
  if (mask == 0) return Fast::kNone;
  // lo/ls/hi/hs compare as unsigned whatever the type says.
  const bool unsigned_cmp = in.cmp == Cmp::kLo || in.cmp == Cmp::kLs || in.cmp == Cmp::kHi || in.cmp == Cmp::kHs;
  Fast r;
  if (ty == Type::kF32) r = Fast::kSetpF32R;
  else if (ty == Type::kF64) r = Fast::kSetpF64R;
  else if (is_s32(ty) && !unsigned_cmp) r = Fast::kSetpS32R;
  else if (is_s32(ty) || is_u32(ty)) r = Fast::kSetpU32R;
  else if (ty == Type::kS64 && !unsigned_cmp) r = Fast::kSetpS64R;
  else if (is_64(ty)) r = Fast::kSetpU64R;
  else return Fast::kNone;
  in.fast_arg = mask;
  return b_reg ? r : static_cast<Fast>(static_cast<uint8_t>(r) + 1);
}

Fast mov_form(const Instr& in) {
  const Operand& d = in.ops[0];
  const Operand& s = in.ops[1];
  if (!reg(d)) return Fast::kNone;
  const int n = type_size(in.type);
  if (reg(s)) {
    if (n == 8 || in.type == Type::kPred) return Fast::kMov64;  // a predicate register holds 0 or 1
    if (n == 4 && !type_pair(in.type)) return type_signed(in.type) ? Fast::kMov32S : Fast::kMov32U;
    return Fast::kNone;
  }
  if (imm(s)) return normalize((uint64_t)s.value, in.type) == (uint64_t)s.value ? Fast::kMovI : Fast::kNone;
  if (s.kind == Operand::kSpecial && n == 4) {  // these fit 31 bits: either extension is the same
    switch (static_cast<Special>(s.id)) {
      case Special::kTidX: return Fast::kMovTidX;
      case Special::kTidY: return Fast::kMovTidY;
      case Special::kNtidX: return Fast::kMovNtidX;
      case Special::kNtidY: return Fast::kMovNtidY;
      case Special::kCtaidX: return Fast::kMovCtaidX;
      case Special::kCtaidY: return Fast::kMovCtaidY;
      default: return Fast::kNone;
    }
  }
  return Fast::kNone;
}

// .v2/.v4 loads and stores whose elements are all registers.
Fast vector_form(const Program& p, const Instr& in) {
  const bool ld = in.op == Op::kLd;
  const Operand& mem = in.ops[ld ? 1 : 0];
  const Operand& value = in.ops[ld ? 0 : 1];
  if (mem.kind != Operand::kMem || mem.mem_base != 1 || value.kind != Operand::kVec || value.value != in.vec) return Fast::kNone;
  if (value.id > p.vector_elements.size() || (uint64_t)value.value > p.vector_elements.size() - value.id) return Fast::kNone;
  for (int64_t i = 0; i < value.value; ++i)
    if (!reg(p.vector_elements[value.id + i])) return Fast::kNone;
  const int n = type_size(in.type);
  const bool wide = n == 8 && in.vec == 2;
  if (!wide && (n != 4 || type_signed(in.type) || type_pair(in.type))) return Fast::kNone;
  const bool shared = in.space == Space::kShared;
  if (!shared && in.space != Space::kGlobal && in.space != Space::kGeneric) return Fast::kNone;
  if (ld) return shared ? (wide ? Fast::kLdSharedVec64 : Fast::kLdSharedVec32) : (wide ? Fast::kLdGlobalVec64 : Fast::kLdGlobalVec32);
  return shared ? (wide ? Fast::kStSharedVec64 : Fast::kStSharedVec32) : (wide ? Fast::kStGlobalVec64 : Fast::kStGlobalVec32);
}

Fast memory_form(const Program& p, const Instr& in) {
  if (in.flags != 0) return Fast::kNone;
  if (in.vec == 2 || in.vec == 4) return vector_form(p, in);
  if (in.vec != 1) return Fast::kNone;
  const bool ld = in.op == Op::kLd;
  const Operand& mem = in.ops[ld ? 1 : 0];
  const Operand& value = in.ops[ld ? 0 : 1];
  const int n = type_size(in.type);
  if (mem.kind != Operand::kMem || !reg(value)) return Fast::kNone;
  if ((in.type == Type::kU8 || in.type == Type::kB8) && mem.mem_base == 1 &&
      (in.space == Space::kGlobal || in.space == Space::kGeneric))
    return ld ? Fast::kLdGlobalU8 : Fast::kStGlobal8;
  if ((n != 4 && n != 8) || type_pair(in.type)) return Fast::kNone;
  if (ld && in.space == Space::kParam && mem.mem_base == 2 && mem.id < p.symbols.size() &&
      p.symbols[mem.id].kind == SymbolKind::kKernelParam && mem.value >= 0) {
    if (n == 8) return Fast::kLdParam64;
    return type_signed(in.type) ? Fast::kLdParamS32 : Fast::kLdParamU32;
  }
  if (mem.mem_base != 1) return Fast::kNone;
  const bool shared = in.space == Space::kShared;
  if (!shared && in.space != Space::kGlobal && in.space != Space::kGeneric) return Fast::kNone;
  if (!ld) {
    if (n == 8) return shared ? Fast::kStShared64 : Fast::kStGlobal64;
    return shared ? Fast::kStShared32 : Fast::kStGlobal32;
  }
  if (n == 8) return shared ? Fast::kLdShared64 : Fast::kLdGlobal64;
  if (type_signed(in.type)) return shared ? Fast::kLdSharedS32 : Fast::kLdGlobalS32;
  return shared ? Fast::kLdSharedU32 : Fast::kLdGlobalU32;
}

// The general path computes these in double whatever the rounding or approximation modifier
// says; a form is chosen only for the modifiers whose meaning that is.
Fast float_unary_form(const Instr& in) {
  if (in.type != Type::kF32 || (in.flags & ~static_cast<uint32_t>(kRn | kApprox)) != 0) return Fast::kNone;
  if (!reg(in.ops[0]) || !reg(in.ops[1])) return Fast::kNone;
  switch (in.op) {
    case Op::kSqrt: return Fast::kSqrtF32;
    case Op::kRsqrt: return Fast::kRsqrtF32;
    case Op::kRcp: return Fast::kRcpF32;
    default: return Fast::kNone;
  }
}

// A second source that may be either: one form reads whichever it is.
Fast either(const Instr& in, Fast f) {
  if (!reg(in.ops[0]) || !reg(in.ops[1]) || (!reg(in.ops[2]) && !imm(in.ops[2]))) return Fast::kNone;
  return f;
}

Fast min_max_form(const Instr& in) {
  if (in.flags != 0) return Fast::kNone;
  const bool mn = in.op == Op::kMin;
  if (is_s32(in.type)) return either(in, mn ? Fast::kMinS32 : Fast::kMaxS32);
  if (in.type == Type::kU32) return either(in, mn ? Fast::kMinU32 : Fast::kMaxU32);
  if (in.type == Type::kF32) return either(in, mn ? Fast::kMinF32 : Fast::kMaxF32);
  return Fast::kNone;
}

Fast selp_form(const Instr& in) {
  if (!reg(in.ops[0]) || !reg(in.ops[3])) return Fast::kNone;
  for (int k : {1, 2})
    if (!reg(in.ops[k]) && !imm(in.ops[k])) return Fast::kNone;
  const int n = type_size(in.type);
  if (n == 8) return Fast::kSelp64;
  if (n != 4 || type_pair(in.type)) return Fast::kNone;
  return type_signed(in.type) ? Fast::kSelpS32 : Fast::kSelpU32;
}

// cvt between 32- and 64-bit integers is a move with the general path's extension; int32 to f32
// and f32 to int32 truncating have forms of their own.
Fast cvt_form(const Instr& in) {
  if (!reg(in.ops[0]) || !reg(in.ops[1]) || in.num_operands != 2) return Fast::kNone;
  const Type to = in.type, from = in.type2;
  auto integer = [](Type t) { return t == Type::kS32 || t == Type::kU32 || t == Type::kS64 || t == Type::kU64; };
  if (integer(to) && integer(from)) {
    if (in.flags != 0) return Fast::kNone;  // .sat clamps
    const bool to64 = type_size(to) == 8, from64 = type_size(from) == 8;
    if (to64 && from64) return Fast::kMov64;
    if (to64) return type_signed(from) ? Fast::kMov32S : Fast::kMov32U;
    return type_signed(to) ? Fast::kMov32S : Fast::kMov32U;
  }
  if (to == Type::kF32 && (from == Type::kS32 || from == Type::kU32) && (in.flags & ~static_cast<uint32_t>(kRn)) == 0)
    return from == Type::kS32 ? Fast::kCvtF32S32 : Fast::kCvtF32U32;
  if (to == Type::kS32 && from == Type::kF32 && in.flags == kRzi) return Fast::kCvtS32F32Rzi;
  if (to == Type::kF64 && from == Type::kF32 && in.flags == 0) return Fast::kCvtF64F32;
  if (to == Type::kF32 && from == Type::kF64 && in.flags == kRn) return Fast::kCvtF32F64;
  return Fast::kNone;
}

Fast double_form(const Instr& in) {
  if ((in.flags & ~static_cast<uint32_t>(kRn)) != 0) return Fast::kNone;
  switch (in.op) {
    case Op::kAdd: return binary(in, Fast::kAddF64R, Fast::kAddF64I);
    case Op::kSub: return binary(in, Fast::kSubF64R, Fast::kSubF64I);
    case Op::kMul: return binary(in, Fast::kMulF64R, Fast::kMulF64I);
    case Op::kFma:
      return reg(in.ops[0]) && reg(in.ops[1]) && reg(in.ops[2]) && reg(in.ops[3]) ? Fast::kFmaF64 : Fast::kNone;
    case Op::kDiv: return reg(in.ops[0]) && reg(in.ops[1]) && reg(in.ops[2]) ? Fast::kDivF64 : Fast::kNone;
    default: return Fast::kNone;
  }
}

Fast float_form(const Instr& in) {
  if (in.type == Type::kF64) return double_form(in);
  if (in.op == Op::kDiv) {
    if (in.type != Type::kF32 || (in.flags & ~static_cast<uint32_t>(kRn | kApprox)) != 0) return Fast::kNone;
    return reg(in.ops[0]) && reg(in.ops[1]) && reg(in.ops[2]) ? Fast::kDivF32 : Fast::kNone;
  }
  if (in.type != Type::kF32 || (in.flags & ~static_cast<uint32_t>(kRn)) != 0) return Fast::kNone;
  switch (in.op) {
    case Op::kAdd: return binary(in, Fast::kAddF32R, Fast::kAddF32I);
    case Op::kSub: return binary(in, Fast::kSubF32R, Fast::kSubF32I);
    case Op::kMul: return binary(in, Fast::kMulF32R, Fast::kMulF32I);
    case Op::kFma:
      return reg(in.ops[0]) && reg(in.ops[1]) && reg(in.ops[2]) && reg(in.ops[3]) ? Fast::kFmaF32 : Fast::kNone;
    default: return Fast::kNone;
  }
}

Fast integer_form(const Instr& in) {
  const Type ty = in.type;
  const bool s32 = is_s32(ty), u32 = is_u32(ty), w64 = is_64(ty);
  const uint32_t flags = in.flags;
  switch (in.op) {
    case Op::kAdd:
      if (flags) return Fast::kNone;
      if (s32) return binary(in, Fast::kAddS32R, Fast::kAddS32I);
      if (u32) return binary(in, Fast::kAddU32R, Fast::kAddU32I);
      if (w64) return binary(in, Fast::kAdd64R, Fast::kAdd64I);
      return Fast::kNone;
    case Op::kSub:
      if (flags) return Fast::kNone;
      if (s32) return binary(in, Fast::kSubS32R, Fast::kSubS32I);
      if (u32) return binary(in, Fast::kSubU32R, Fast::kSubU32I);
      if (w64) return binary(in, Fast::kSub64R, Fast::kSub64I);
      return Fast::kNone;
    case Op::kMul:
      if (flags == kLo) {
        if (s32) return binary(in, Fast::kMulLoS32R, Fast::kMulLoS32I);
        if (u32) return binary(in, Fast::kMulLoU32R, Fast::kMulLoU32I);
        if (w64) return binary(in, Fast::kMulLo64R, Fast::kMulLo64I);
      } else if (flags == kWide) {
        if (s32) return binary(in, Fast::kMulWideS32R, Fast::kMulWideS32I);
        if (ty == Type::kU32) return binary(in, Fast::kMulWideU32R, Fast::kMulWideU32I);
      }
      return Fast::kNone;
    case Op::kMad:
      if (flags != kLo || !(s32 || u32)) return Fast::kNone;
      if (!reg(in.ops[0]) || !reg(in.ops[1]) || !reg(in.ops[2]) || !reg(in.ops[3])) return Fast::kNone;
      return s32 ? Fast::kMadLoS32 : Fast::kMadLoU32;
    case Op::kShl: case Op::kShr: {
      if (flags) return Fast::kNone;
      const bool shl = in.op == Op::kShl;
      // An immediate shift of the width or more is PTX's clamp: the general path has it.
      const bool small_imm = imm(in.ops[2]) && (uint64_t)in.ops[2].value < (w64 ? 64u : 32u);
      if (w64) return shl && small_imm && reg(in.ops[0]) && reg(in.ops[1]) ? Fast::kShl64I : Fast::kNone;
      if (!s32 && !u32) return Fast::kNone;
      if (imm(in.ops[2]) && !small_imm) return Fast::kNone;
      if (shl) return u32 ? binary(in, Fast::kShlU32R, Fast::kShlU32I) : Fast::kNone;
      return s32 ? binary(in, Fast::kShrS32R, Fast::kShrS32I) : binary(in, Fast::kShrU32R, Fast::kShrU32I);
    }
    case Op::kAnd: case Op::kOr: case Op::kXor: {
      if (ty == Type::kPred) {
        if (!reg(in.ops[0]) || !reg(in.ops[1]) || !reg(in.ops[2])) return Fast::kNone;
        return in.op == Op::kAnd ? Fast::kAndPred : in.op == Op::kOr ? Fast::kOrPred : Fast::kXorPred;
      }
      if (w64 && in.op == Op::kAnd && imm(in.ops[2])) return binary(in, Fast::kNone, Fast::kAnd64I);
      if (!u32) return Fast::kNone;
      if (in.op == Op::kAnd) return binary(in, Fast::kAndU32R, Fast::kAndU32I);
      if (in.op == Op::kOr) return binary(in, Fast::kOrU32R, Fast::kOrU32I);
      return binary(in, Fast::kXorU32R, Fast::kXorU32I);
    }
    default:
      return Fast::kNone;
  }
}

// atom.add and red.add with no cache hint: the operation every histogram and reduction uses.
Fast atomic_form(const Instr& in) {
  if (in.mode != Mode::kAdd || in.flags != 0) return Fast::kNone;
  const bool atom = in.op == Op::kAtom;
  const Operand& mem = in.ops[atom ? 1 : 0];
  const Operand& b = in.ops[atom ? 2 : 1];
  if (mem.kind != Operand::kMem || mem.mem_base != 1 || (!reg(b) && !imm(b)) || (atom && !reg(in.ops[0]))) return Fast::kNone;
  if (in.space != Space::kGlobal && in.space != Space::kGeneric && in.space != Space::kShared) return Fast::kNone;
  const Type ty = in.type;
  if (ty == Type::kF32) return atom ? Fast::kAtomAddF32 : Fast::kRedAddF32;
  if (ty == Type::kU64 || ty == Type::kS64) return atom ? Fast::kAtomAdd64 : Fast::kRedAdd64;
  if (ty == Type::kU32 || ty == Type::kS32) return atom ? (ty == Type::kS32 ? Fast::kAtomAddS32 : Fast::kAtomAddU32) : Fast::kRedAdd32;
  return Fast::kNone;
}

Fast form_of(const Program& p, Instr& in) {
  switch (in.op) {
    case Op::kMov: return mov_form(in);
    case Op::kCvta:  // to or from the global space: the address does not change
      return in.space == Space::kGlobal && is_64(in.type) && reg(in.ops[0]) && reg(in.ops[1]) ? Fast::kMov64 : Fast::kNone;
    case Op::kSetp: return setp_form(in);
    case Op::kLd: case Op::kSt: return memory_form(p, in);
    case Op::kBra: return in.target >= 0 ? Fast::kBra : Fast::kNone;
    case Op::kBar: return in.mode == Mode::kNone ? Fast::kBarSync : Fast::kNone;  // bar.red: the general path
    case Op::kAdd: case Op::kSub: case Op::kMul: case Op::kFma: case Op::kDiv:
      if (in.type == Type::kF32 || in.type == Type::kF64) return float_form(in);
      return integer_form(in);
    case Op::kSqrt: case Op::kRsqrt: case Op::kRcp: return float_unary_form(in);
    case Op::kNeg: case Op::kAbs:
      if (in.type != Type::kF32 || in.flags != 0 || !reg(in.ops[0]) || !reg(in.ops[1])) return Fast::kNone;
      return in.op == Op::kNeg ? Fast::kNegF32 : Fast::kAbsF32;
    case Op::kMin: case Op::kMax: return min_max_form(in);
    case Op::kSelp: return selp_form(in);
    case Op::kCvt: return cvt_form(in);
    case Op::kAtom: case Op::kRed: return atomic_form(in);
    default: return integer_form(in);
  }
}

// The register a form certainly writes (its destination), or -1: a store, a branch, a barrier
// write none, a vector load writes its elements (vector_writes). The general path writes the same
// register (ptx_fast_forms_test.cpp compares them); an instruction without a form writes none
// here, which only makes the analysis below zero more.
int64_t form_writes(const Instr& in) {
  switch (in.fast) {
    case Fast::kNone: case Fast::kBra: case Fast::kBarSync:
    case Fast::kStGlobal32: case Fast::kStGlobal64: case Fast::kStShared32: case Fast::kStShared64: case Fast::kStGlobal8:
    case Fast::kStGlobalVec32: case Fast::kStGlobalVec64: case Fast::kStSharedVec32: case Fast::kStSharedVec64:
    case Fast::kRedAdd32: case Fast::kRedAdd64: case Fast::kRedAddF32:
    case Fast::kLdGlobalVec32: case Fast::kLdGlobalVec64: case Fast::kLdSharedVec32: case Fast::kLdSharedVec64:
      return -1;
    default:
      return in.ops[0].kind == Operand::kReg ? (int64_t)in.ops[0].id : -1;
  }
}
bool vector_writes(const Instr& in) {
  return in.fast == Fast::kLdGlobalVec32 || in.fast == Fast::kLdGlobalVec64 || in.fast == Fast::kLdSharedVec32 ||
         in.fast == Fast::kLdSharedVec64;
}

// Calls `f(register)` for every register `in` may read: every one its operands name (addresses'
// bases and vectors' elements included) but the destination it certainly writes, and its guard.
template <typename F>
void for_each_read(const Program& p, const Instr& in, F f) {
  if (in.guard >= 0) f((uint32_t)in.guard);
  const bool dest_written = form_writes(in) >= 0 || vector_writes(in);
  for (int k = dest_written ? 1 : 0; k < 6; ++k) {
    const Operand& o = in.ops[k];
    if (o.kind == Operand::kReg || (o.kind == Operand::kMem && o.mem_base == 1)) f(o.id);
    if (o.kind != Operand::kVec) continue;
    for (int64_t i = 0; i < o.value && o.id + (uint64_t)i < p.vector_elements.size(); ++i) {
      const Operand& e = p.vector_elements[o.id + i];
      if (e.kind == Operand::kReg) f(e.id);
    }
  }
}

// Where control goes after `in` at `pc`: its branch target, and the next instruction unless it
// certainly leaves (an unguarded bra, ret or exit). Anything else (a barrier, a call, a yield)
// goes on at the next one.
template <typename F>
void for_each_successor(const Instr& in, uint32_t pc, F f) {
  if (in.op == Op::kBra && in.target >= 0) f((uint32_t)in.target);
  const bool leaves = in.guard < 0 && (in.op == Op::kBra || in.op == Op::kRet || in.op == Op::kExit);
  if (!leaves) f(pc + 1);
}

// Bits of the must-be-written sets below, at most: past it, every register is zeroed.
constexpr uint64_t kMaxAnalysisWords = 1u << 22;

// Function::read_before_written: a forward analysis of the registers written on every path to
// each instruction (an intersection where paths meet), then the reads outside that set.
std::vector<uint32_t> read_before_written(const Program& p, const Function& f) {
  const uint32_t n = (uint32_t)f.code.size(), words = (f.num_regs + 63) / 64;
  if (words == 0) return {};
  std::vector<uint32_t> all(f.num_regs);
  for (uint32_t r = 0; r < f.num_regs; ++r) all[r] = r;
  if ((uint64_t)(n + 1) * words > kMaxAnalysisWords) return all;
  for (const Instr& in : f.code)
    if (in.op == Op::kBra && in.target < 0) return all;  // a branch the analysis cannot follow
  // written[pc]: registers written on every path to pc so far seen; all ones until one reaches it.
  std::vector<uint64_t> written((uint64_t)(n + 1) * words, ~0ull);
  std::vector<bool> reached(n + 1, false);
  std::fill_n(written.begin(), words, 0);
  reached[0] = true;
  std::vector<uint32_t> work = {0};
  std::vector<uint64_t> out(words);
  while (!work.empty()) {
    const uint32_t pc = work.back();
    work.pop_back();
    if (pc >= n) continue;
    const Instr& in = f.code[pc];
    std::copy_n(written.begin() + (uint64_t)pc * words, words, out.begin());
    auto mark = [&](uint64_t r) { if (r < f.num_regs) out[r / 64] |= 1ull << (r % 64); };
    if (in.guard < 0) {  // a guarded instruction may write nothing
      if (const int64_t d = form_writes(in); d >= 0) mark((uint64_t)d);
      for (int64_t i = 0; vector_writes(in) && i < in.ops[0].value; ++i) mark(p.vector_elements[in.ops[0].id + i].id);
    }
    for_each_successor(in, pc, [&](uint32_t s) {
      if (s > n) return;
      uint64_t* w = &written[(uint64_t)s * words];
      bool changed = !reached[s];
      reached[s] = true;
      for (uint32_t i = 0; i < words; ++i) {
        const uint64_t meet = w[i] & out[i];
        changed = changed || meet != w[i];
        w[i] = meet;
      }
      if (changed) work.push_back(s);
    });
  }
  std::vector<bool> unset(f.num_regs, false);
  for (uint32_t pc = 0; pc < n; ++pc) {
    if (!reached[pc]) continue;
    const uint64_t* w = &written[(uint64_t)pc * words];
    for_each_read(p, f.code[pc], [&](uint32_t r) {
      if (r < f.num_regs && !(w[r / 64] >> (r % 64) & 1)) unset[r] = true;
    });
  }
  std::vector<uint32_t> v;
  for (uint32_t r = 0; r < f.num_regs; ++r)
    if (unset[r]) v.push_back(r);
  return v;
}

}  // namespace

void choose_fast_forms(Program& p) {
  for (Function& f : p.functions)
    for (Instr& in : f.code) {
      in.fast_arg = 0;
      in.fast = form_of(p, in);
    }
  for (Function& f : p.functions)
    if (f.is_entry && f.has_body) f.read_before_written = read_before_written(p, f);
}

}  // namespace vgpu::executor::sim::ptx
