// mbarrier: the split barrier of a CTA's threads in shared memory, under cuda::barrier,
// cuda::memcpy_async with a barrier and cuda::pipeline. Its 64 bits are the interpreter's own
// (on a GPU the layout is opaque too, and programs reach it only through these instructions):
// the arrivals still pending in the current phase (bits 0-20), the arrivals each phase expects
// (bits 21-41) and the current phase's parity (bit 63). A state token is the word as an arrival
// found it. cp.async copies at once, so the arrival it owes a barrier is already made.
#include <cstring>

#include "ptx_exec.h"

namespace vgpu::executor::sim::ptx {
namespace {

constexpr uint64_t kCountBits = 21;
constexpr uint64_t kCountMask = (1ull << kCountBits) - 1;
constexpr uint64_t kMaxCount = (1ull << 20) - 1;  // PTX's bound on an mbarrier's count
constexpr uint64_t kPhase = 1ull << 63;

uint64_t pending(uint64_t w) { return w & kCountMask; }
uint64_t expected(uint64_t w) { return (w >> kCountBits) & kCountMask; }
uint64_t barrier_word(uint64_t pending, uint64_t expected, uint64_t phase) {
  return pending | expected << kCountBits | phase;
}

// An arrival of `count` (arrive_drop: also expected no more from now on); the phase completes,
// and the next begins, when none is pending.
bool arrive(Context& c, const Instr& in, uint64_t* w, uint64_t count, bool drop) {
  uint64_t left = pending(*w), each = expected(*w);
  if (each == 0) return trap(c, in, "mbarrier used before mbarrier.init or after mbarrier.inval");
  if (count == 0 || count > left) {
    return trap(c, in, "mbarrier arrival of " + std::to_string(count) + " where " + std::to_string(left) + " are pending");
  }
  if (drop) each -= count;
  left -= count;
  uint64_t phase = *w & kPhase;
  if (left == 0) {
    phase ^= kPhase;
    left = each;
  }
  *w = barrier_word(left, each, phase);
  return true;
}

}  // namespace

Barrier mbarrier_instruction(Context& c, Thread& t, const Instr& in) {
  const Mode mode = in.mode;
  if (mode == Mode::kMbPendingCount) {
    write_reg(t, in.ops[0], pending(operand_value(c, t, in.ops[1])), Type::kU32);
    return Barrier::kDone;
  }
  // Without .noinc the copies' arrival comes with one more expected: nothing changes.
  if (mode == Mode::kMbCpAsyncArrive && !(in.flags & kNoinc)) return Barrier::kDone;
  const bool object_first = mode == Mode::kMbInit || mode == Mode::kMbInval || mode == Mode::kMbCpAsyncArrive;
  uint8_t* p = address_in(c, t, in, in.ops[object_first ? 0 : 1], 8, in.space);
  if (!p) return Barrier::kFailed;
  if (reinterpret_cast<uintptr_t>(p) % 8 != 0) {
    trap(c, in, "mbarrier object not 8-byte aligned");
    return Barrier::kFailed;
  }
  uint64_t w;
  std::memcpy(&w, p, 8);
  switch (mode) {
    case Mode::kMbInit: {
      const uint64_t count = operand_value(c, t, in.ops[1]) & 0xffffffffu;
      if (count == 0 || count > kMaxCount) {
        trap(c, in, "mbarrier.init count " + std::to_string(count) + " outside 1.." + std::to_string(kMaxCount));
        return Barrier::kFailed;
      }
      w = barrier_word(count, count, 0);
      break;
    }
    case Mode::kMbInval: w = 0; break;
    case Mode::kMbArrive: case Mode::kMbArriveDrop: case Mode::kMbCpAsyncArrive: {
      const bool counted = mode != Mode::kMbCpAsyncArrive && in.num_operands == 3;
      const uint64_t count = counted ? operand_value(c, t, in.ops[2]) & 0xffffffffu : 1;
      const uint64_t before = w;
      if (!arrive(c, in, &w, count, mode == Mode::kMbArriveDrop)) return Barrier::kFailed;
      if (mode != Mode::kMbCpAsyncArrive) write_reg(t, in.ops[0], before, Type::kB64);
      break;
    }
    case Mode::kMbTestWait: {
      // Complete once the phase has moved past the token's, or past the phase of that parity.
      const uint64_t v = operand_value(c, t, in.ops[2]);
      const bool done = (in.flags & kParity) ? (w >> 63) != (v & 1) : (w & kPhase) != (v & kPhase);
      write_reg(t, in.ops[0], done, Type::kPred);
      return done ? Barrier::kDone : Barrier::kWaiting;
    }
    default: break;
  }
  std::memcpy(p, &w, 8);
  return Barrier::kDone;
}

}  // namespace vgpu::executor::sim::ptx
