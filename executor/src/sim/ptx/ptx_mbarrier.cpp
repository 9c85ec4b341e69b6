// mbarrier: the split barrier of a CTA's threads in shared memory, under cuda::barrier,
// cuda::memcpy_async with a barrier and cuda::pipeline, and the bulk copies (TMA's, not tensor)
// that complete on one. Its 64 bits are the interpreter's own (on a GPU the layout is opaque
// too, and programs reach it only through these instructions): the arrivals still pending in
// the current phase (bits 0-20), the arrivals each phase expects (21-41), the transaction
// count (42-62, signed: a copy may complete before its bytes are expected) and the current
// phase's parity (63). A phase completes when no arrival and no byte is pending. A state token
// is the word as an arrival found it. Copies complete at once, so the arrival cp.async owes a
// barrier is already made, and a bulk copy's bytes count at once.
#include <cstring>

#include "ptx_exec.h"

namespace vgpu::executor::sim::ptx {
namespace {

constexpr int kCountBits = 21;
constexpr uint64_t kCountMask = (1ull << kCountBits) - 1;
constexpr int64_t kMaxCount = (1ll << 20) - 1;  // PTX's bound on counts and transaction counts
constexpr uint64_t kPhase = 1ull << 63;

struct State {
  int64_t pending, expected, tx;
  uint64_t phase;
};

State unpack(uint64_t w) {
  int64_t tx = static_cast<int64_t>((w >> (2 * kCountBits)) & kCountMask);
  if (tx > kMaxCount) tx -= int64_t{1} << kCountBits;
  return {static_cast<int64_t>(w & kCountMask), static_cast<int64_t>((w >> kCountBits) & kCountMask), tx,
          w & kPhase};
}

uint64_t pack(const State& s) {
  return static_cast<uint64_t>(s.pending) | static_cast<uint64_t>(s.expected) << kCountBits |
         (static_cast<uint64_t>(s.tx) & kCountMask) << (2 * kCountBits) | s.phase;
}

// Arrivals of `count` (arrive_drop: also expected no more from now on), after `tx` more bytes
// are expected; then, or after bytes arrive (tx negative, count 0), the phase completes when
// nothing is pending.
bool update(Context& c, const Instr& in, uint64_t* w, int64_t count, bool drop, int64_t tx) {
  State s = unpack(*w);
  if (s.expected == 0) return trap(c, in, "mbarrier used before mbarrier.init or after mbarrier.inval");
  if (count > s.pending) {
    return trap(c, in, "mbarrier arrival of " + std::to_string(count) + " where " + std::to_string(s.pending) +
                           " are pending");
  }
  s.tx += tx;
  if (s.tx > kMaxCount || s.tx < -kMaxCount) return trap(c, in, "mbarrier transaction count out of range");
  if (drop) s.expected -= count;
  s.pending -= count;
  if (s.pending == 0 && s.tx == 0) {
    s.phase ^= kPhase;
    s.pending = s.expected;
  }
  *w = pack(s);
  return true;
}

int64_t count_operand(Context& c, Thread& t, const Operand& o) {
  return static_cast<int64_t>(operand_value(c, t, o) & 0xffffffffu);
}

// cp.async.bulk: `size` bytes (a multiple of 16, both ends 16-byte aligned) from global to
// shared memory, then as many bytes completed on the barrier.
bool bulk_copy(Context& c, Thread& t, const Instr& in, uint64_t* barrier) {
  const uint64_t size = operand_value(c, t, in.ops[2]) & 0xffffffffu;
  if (size % 16 != 0) return trap(c, in, "cp.async.bulk of " + std::to_string(size) + " bytes, not a multiple of 16");
  uint8_t* dst = address_in(c, t, in, in.ops[0], size, Space::kShared);
  if (!dst) return false;
  const uint8_t* src = address_in(c, t, in, in.ops[1], size, Space::kGlobal);
  if (!src) return false;
  if (reinterpret_cast<uintptr_t>(dst) % 16 != 0 || reinterpret_cast<uintptr_t>(src) % 16 != 0) {
    return trap(c, in, "cp.async.bulk address not 16-byte aligned");
  }
  std::memcpy(dst, src, size);
  return update(c, in, barrier, 0, false, -static_cast<int64_t>(size));
}

}  // namespace

Barrier mbarrier_instruction(Context& c, Thread& t, const Instr& in) {
  const Mode mode = in.mode;
  if (mode == Mode::kMbPendingCount) {
    write_reg(t, in.ops[0], unpack(operand_value(c, t, in.ops[1])).pending, Type::kU32);
    return Barrier::kDone;
  }
  // Without .noinc the copies' arrival comes with one more expected: nothing changes.
  if (mode == Mode::kMbCpAsyncArrive && !(in.flags & kNoinc)) return Barrier::kDone;
  const int object = mode == Mode::kMbBulkCopy ? 3
                     : (mode == Mode::kMbArrive || mode == Mode::kMbArriveDrop || mode == Mode::kMbTestWait) ? 1
                                                                                                             : 0;
  uint8_t* p = address_in(c, t, in, in.ops[object], 8, in.space);
  if (!p) return Barrier::kFailed;
  if (reinterpret_cast<uintptr_t>(p) % 8 != 0) {
    trap(c, in, "mbarrier object not 8-byte aligned");
    return Barrier::kFailed;
  }
  uint64_t w;
  std::memcpy(&w, p, 8);
  bool ok = true;
  switch (mode) {
    case Mode::kMbInit: {
      const int64_t count = count_operand(c, t, in.ops[1]);
      if (count == 0 || count > kMaxCount) {
        trap(c, in, "mbarrier.init count " + std::to_string(count) + " outside 1.." + std::to_string(kMaxCount));
        return Barrier::kFailed;
      }
      w = pack({count, count, 0, 0});
      break;
    }
    case Mode::kMbInval: w = 0; break;
    case Mode::kMbArrive: case Mode::kMbArriveDrop: {
      // state, [a]{, count} or, with .expect_tx, state, [a], tx-count.
      const bool expect = (in.flags & kExpectTx) != 0;
      const int64_t count = !expect && in.num_operands == 3 ? count_operand(c, t, in.ops[2]) : 1;
      const int64_t tx = expect ? count_operand(c, t, in.ops[2]) : 0;
      if (count == 0) {
        trap(c, in, "mbarrier arrival of 0");
        return Barrier::kFailed;
      }
      const uint64_t before = w;
      ok = update(c, in, &w, count, mode == Mode::kMbArriveDrop, tx);
      write_reg(t, in.ops[0], before, Type::kB64);
      break;
    }
    case Mode::kMbCpAsyncArrive: ok = update(c, in, &w, 1, false, 0); break;
    case Mode::kMbExpectTx: ok = update(c, in, &w, 0, false, count_operand(c, t, in.ops[1])); break;
    case Mode::kMbCompleteTx: ok = update(c, in, &w, 0, false, -count_operand(c, t, in.ops[1])); break;
    case Mode::kMbBulkCopy: ok = bulk_copy(c, t, in, &w); break;
    case Mode::kMbTestWait: {
      // Complete once the phase has moved past the token's, or past the phase of that parity.
      const uint64_t v = operand_value(c, t, in.ops[2]);
      const bool done = (in.flags & kParity) ? (w >> 63) != (v & 1) : (w & kPhase) != (v & kPhase);
      write_reg(t, in.ops[0], done, Type::kPred);
      return done ? Barrier::kDone : Barrier::kWaiting;
    }
    default: break;
  }
  if (!ok) return Barrier::kFailed;
  std::memcpy(p, &w, 8);
  return Barrier::kDone;
}

}  // namespace vgpu::executor::sim::ptx
