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

// Two builds of the runner, the one for the host's CPU chosen once: where the CPU has FMA
// instructions, fmaf/fma compile to one instruction instead of a libm call (a tenth of a tiled
// matrix product's time). No expression in the runner multiplies and adds in one, and the file
// is built with -ffp-contract=off, so that build fuses nothing the general path computes with
// two roundings. (GCC cannot clone a function that takes its labels' addresses, hence the
// include rather than target_clones.)
namespace {
#define VGPU_FAST_RUN_NAME run_fast_fma
#define VGPU_FAST_RUN_TARGET __attribute__((target("fma")))
#include "ptx_fast_run.inc"
#undef VGPU_FAST_RUN_NAME
#undef VGPU_FAST_RUN_TARGET
#define VGPU_FAST_RUN_NAME run_fast_any
#define VGPU_FAST_RUN_TARGET
#include "ptx_fast_run.inc"
#undef VGPU_FAST_RUN_NAME
#undef VGPU_FAST_RUN_TARGET
}  // namespace

bool run_fast(Context& c, Thread& t, const Instr* code, uint32_t count) {
  static bool (*const run)(Context&, Thread&, const Instr*, uint32_t) =
      __builtin_cpu_supports("fma") ? run_fast_fma : run_fast_any;
  return run(c, t, code, count);
}

}  // namespace vgpu::executor::sim::ptx
