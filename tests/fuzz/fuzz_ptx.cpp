// libFuzzer target: the sim worker's PTX parser on arbitrary text, as a worker
// runs it on the PTX a guest's module carries. A parsed program must hold what
// the interpreter relies on without checking again: every register, symbol,
// vector element and branch target it names exists.
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
    }
  }
  return 0;
}
