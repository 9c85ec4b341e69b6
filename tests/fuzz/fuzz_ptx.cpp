// libFuzzer target: the sim worker's PTX parser on arbitrary text, as a worker
// runs it on the PTX a guest's module carries. A parsed program must hold what
// the interpreter relies on without checking again: every register, symbol,
// vector element and branch target it names exists, and every specialized
// instruction form reads registers where it assumes them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ptx/ptx_program.h"

namespace ptx = vgpu::executor::sim::ptx;

namespace {

void check_operand(const ptx::Program& p, const ptx::Function& f, const ptx::Operand& o, bool in_vector) {
  using K = ptx::Operand;
  switch (o.kind) {
    case K::kReg:
      if (o.id >= f.num_regs) __builtin_trap();
      break;
    case K::kSym:
      if (o.id >= p.symbols.size()) __builtin_trap();
      break;
    case K::kMem:
      if ((o.mem_base == 1 && o.id >= f.num_regs) || (o.mem_base == 2 && o.id >= p.symbols.size())) __builtin_trap();
      break;
    case K::kFunc:
      if (o.id >= p.functions.size()) __builtin_trap();
      break;
    case K::kVec:
      if (in_vector || o.value < 0 || o.id > p.vector_elements.size() ||
          static_cast<uint64_t>(o.value) > p.vector_elements.size() - o.id)
        __builtin_trap();
      for (int64_t i = 0; i < o.value; ++i) check_operand(p, f, p.vector_elements[o.id + i], true);
      break;
    default:
      break;
  }
}

// What the threaded runner (ptx_fast_run.cpp) reads without checking again: the operands a
// specialized form reads as registers are registers of the function, its memory operand has
// the base the form assumes.
void check_fast_form(const ptx::Program& p, const ptx::Function& f, const ptx::Instr& in) {
  using F = ptx::Fast;
  using K = ptx::Operand;
  auto reg = [&](int k) {
    if (in.ops[k].kind != K::kReg || in.ops[k].id >= f.num_regs) __builtin_trap();
  };
  auto reg_or_imm = [&](int k) {
    if (in.ops[k].kind != K::kImm) reg(k);
  };
  auto mem = [&](int k, int base) {
    const ptx::Operand& o = in.ops[k];
    if (o.kind != K::kMem || o.mem_base != base) __builtin_trap();
    if (base == 1 && o.id >= f.num_regs) __builtin_trap();
    if (base == 2 && (o.id >= p.symbols.size() || p.symbols[o.id].kind != ptx::SymbolKind::kKernelParam)) __builtin_trap();
  };
  switch (in.fast) {
    case F::kNone: return;
    case F::kBarSync:  // the whole CTA's barrier: its id and count are not read
      return;
    case F::kBra:
      if (in.target < 0) __builtin_trap();
      return;
    case F::kMovI: case F::kMovTidX: case F::kMovTidY: case F::kMovNtidX: case F::kMovNtidY: case F::kMovCtaidX:
    case F::kMovCtaidY:
      reg(0);
      return;
    case F::kLdGlobalU32: case F::kLdGlobalS32: case F::kLdGlobal64: case F::kLdSharedU32: case F::kLdSharedS32:
    case F::kLdShared64: case F::kLdGlobalU8:
      reg(0);
      mem(1, 1);
      return;
    case F::kStGlobal32: case F::kStGlobal64: case F::kStShared32: case F::kStShared64: case F::kStGlobal8:
      mem(0, 1);
      reg(1);
      return;
    case F::kLdGlobalVec32: case F::kLdGlobalVec64: case F::kLdSharedVec32: case F::kLdSharedVec64:
    case F::kStGlobalVec32: case F::kStGlobalVec64: case F::kStSharedVec32: case F::kStSharedVec64: {
      const bool ld = in.op == ptx::Op::kLd;
      mem(ld ? 1 : 0, 1);
      const ptx::Operand& v = in.ops[ld ? 0 : 1];
      if (v.kind != K::kVec || v.value != in.vec || v.id > p.vector_elements.size() ||
          static_cast<uint64_t>(v.value) > p.vector_elements.size() - v.id)
        __builtin_trap();
      for (int64_t i = 0; i < v.value; ++i) {
        const ptx::Operand& e = p.vector_elements[v.id + i];
        if (e.kind != K::kReg || e.id >= f.num_regs) __builtin_trap();
      }
      return;
    }
    case F::kAtomAddU32: case F::kAtomAddS32: case F::kAtomAdd64: case F::kAtomAddF32:
      reg(0);
      mem(1, 1);
      reg_or_imm(2);
      return;
    case F::kRedAdd32: case F::kRedAdd64: case F::kRedAddF32:
      mem(0, 1);
      reg_or_imm(1);
      return;
    case F::kLdParamU32: case F::kLdParamS32: case F::kLdParam64:
      reg(0);
      mem(1, 2);
      return;
    case F::kSetpS32R: case F::kSetpU32R: case F::kSetpS64R: case F::kSetpU64R: case F::kSetpF32R:
    case F::kSetpF64R:
      reg(3);
      [[fallthrough]];
    case F::kSetpS32I: case F::kSetpU32I: case F::kSetpS64I: case F::kSetpU64I: case F::kSetpF32I:
    case F::kSetpF64I:
      reg(0);
      reg(2);
      if (in.ops[1].kind == K::kReg) reg(1);
      return;
    case F::kMadLoS32: case F::kMadLoU32: case F::kFmaF32: case F::kFmaF64:
      for (int k = 0; k < 4; ++k) reg(k);
      return;
    case F::kSelpU32: case F::kSelpS32: case F::kSelp64:
      reg(0);
      reg_or_imm(1);
      reg_or_imm(2);
      reg(3);
      return;
    case F::kMinS32: case F::kMaxS32: case F::kMinU32: case F::kMaxU32: case F::kMinF32: case F::kMaxF32:
      reg(0);
      reg(1);
      reg_or_imm(2);
      return;
    case F::kAddS32R: case F::kAddU32R: case F::kSubS32R: case F::kSubU32R: case F::kMulLoS32R: case F::kMulLoU32R:
    case F::kMulWideS32R: case F::kMulWideU32R: case F::kShlU32R: case F::kShrU32R: case F::kShrS32R:
    case F::kAndU32R: case F::kOrU32R: case F::kXorU32R: case F::kAdd64R: case F::kSub64R: case F::kMulLo64R:
    case F::kAndPred: case F::kOrPred: case F::kXorPred: case F::kAddF32R: case F::kSubF32R: case F::kMulF32R:
    case F::kDivF32: case F::kAddF64R: case F::kSubF64R: case F::kMulF64R: case F::kDivF64:
      reg(2);
      [[fallthrough]];
    default:  // the immediate forms, moves and conversions: a destination and a register source
      reg(0);
      reg(1);
      return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string why;
  auto p = ptx::parse(std::string_view(reinterpret_cast<const char*>(data), size), &why);
  if (!p) {
    if (why.empty()) __builtin_trap();  // a refusal always says why
    return 0;
  }
  for (const ptx::Function& f : p->functions) {
    for (const ptx::Instr& in : f.code) {
      if (in.guard >= 0 && static_cast<uint32_t>(in.guard) >= f.num_regs) __builtin_trap();
      if (in.op == ptx::Op::kBra && (in.target < 0 || static_cast<size_t>(in.target) >= f.code.size())) __builtin_trap();
      if (in.text >= p->texts.size() || in.num_operands > 6) __builtin_trap();
      for (int k = 0; k < in.num_operands; ++k) check_operand(*p, f, in.ops[k], false);
      check_fast_form(*p, f, in);
    }
  }
  return 0;
}
