// Internal to the interpreter: the specialized forms of the commonest instructions (Fast, in
// ptx_program.h), chosen after parsing (ptx_fast.cpp) and run before the general path looks at
// an instruction (ptx_fast_run.cpp).
// Most of a kernel's instructions are plain 32/64-bit integer and f32 arithmetic, moves,
// comparisons, loads and stores through a register and branches; run here they skip the type
// dispatch, the operand-kind checks and the normalization switch of the general path.
#pragma once

#include <cstdint>

#include "ptx_exec.h"

namespace vgpu::executor::sim::ptx {

// Sets Instr::fast (and fast_arg) of every instruction of `p`.
void choose_fast_forms(Program& p);

// Addresses below this are a null pointer or a member of one: a GPU's illegal address.
inline constexpr uint64_t kNullPage = 4096;

// Runs the thread's instructions from t.pc for as long as each has a specialized form (or is
// skipped by its guard), and leaves t.pc at the first one it did not run: an instruction
// without a form, the end of the code, or one whose case the general path handles (an address
// that traps, a branch that ends the thread's slice). Every form ends in a dispatch of its own
// (threaded code), so the host's branch predictor learns which form follows which.
// true when it stopped at a bar.sync (kBarSync), t.pc already past it: the thread waits there
// for the others without the general path decoding the barrier again.
bool run_fast(Context& c, Thread& t, const Instr* code, uint32_t count);

}  // namespace vgpu::executor::sim::ptx
