// Runs a kernel: validates everything it can reach, lays out its memory, then runs the CTAs in
// the grid's order, one after another or on several host threads (ptx_parallel.cpp). Inside a
// CTA each thread runs alone until it reaches a barrier, a warp-collective instruction or its
// end; collectives are then computed per warp, and a barrier is released when no thread can run
// any more (exited threads no longer count, as on a GPU).
#include <algorithm>
#include <set>

#include "ptx_exec.h"

namespace vgpu::executor::sim::ptx {
namespace {

constexpr uint64_t kRecursiveStackBytes = 64 << 10;  // local stack when the call graph has a cycle
constexpr uint64_t kMaxLocalPerCta = 1ull << 30;
constexpr uint64_t kParallelBytes = 256ull << 20;  // CTA memory of all host threads together

Result fail(Outcome o, std::string m) { return Result{o, std::move(m)}; }

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

// The functions the entry can reach, each with the local memory its deepest call chain needs.
struct Reach {
  std::vector<uint32_t> functions;
  uint64_t stack_bytes = 0;
  bool recursive = false;
};

uint64_t stack_of(const Program& p, uint32_t f, std::vector<int>& state, std::vector<uint64_t>& memo, Reach& r, int depth) {
  if (state[f] == 2) return memo[f];
  if (state[f] == 1 || depth > 64) { r.recursive = true; return 0; }
  state[f] = 1;
  r.functions.push_back(f);
  uint64_t deepest = 0;
  for (const Instr& in : p.functions[f].code) {
    if (in.op != Op::kCall || in.ops[1].kind != Operand::kFunc) continue;
    uint32_t g = in.ops[1].id;
    if (g < p.functions.size() && p.functions[g].has_body) deepest = std::max(deepest, stack_of(p, g, state, memo, r, depth + 1));
  }
  state[f] = 2;
  return memo[f] = align_up(p.functions[f].local_size, 16) + deepest;
}

// Why `in` cannot run ("" if it can). Checked at every launch: no string is
// built for an instruction that is fine.
std::string texture_refusal(const Program& p, const Instr& in, const Environment& env) {
  const std::string name = "instruction " + p.texts[in.text];
  const bool tex = in.op == Op::kTex;
  const Operand& mem = in.ops[tex || in.op == Op::kSuld ? 1 : 0];
  if (mem.kind != Operand::kMem || mem.mem_base != 1) return name + " (a texture or surface reference, not an object)";
  if (!(tex ? env.texture_read && env.texture_fetch : bool(env.surface_access))) return name + " (no texture unit)";
  const Operand& coords = in.ops[tex || in.op == Op::kSuld ? 2 : 1];
  const Operand& data = in.ops[in.op == Op::kSust ? 2 : 0];
  if (in.mode == Mode::kNone || coords.kind != Operand::kVec || (tex && data.kind != Operand::kVec)) return name;
  if (tex && ((in.type2 != Type::kF32 && in.type2 != Type::kS32) || ((in.flags & kLevel) && in.num_operands < 4))) return name;
  if (tex && in.type != Type::kF32 && in.type != Type::kS32 && in.type != Type::kU32) return name;
  if (!tex && type_float(in.type)) return name;
  return "";
}

// Half precision: what runs through the float paths (computed in float or double, rounded to
// half), and, for f16x2, lane by lane.
bool half_ok(Op op) {
  switch (op) {
    case Op::kCvt: case Op::kLd: case Op::kSt: case Op::kMov: case Op::kAdd: case Op::kSub: case Op::kMul:
    case Op::kMad: case Op::kFma: case Op::kDiv: case Op::kAbs: case Op::kNeg: case Op::kMin: case Op::kMax:
    case Op::kSetp: case Op::kSelp: case Op::kSqrt: case Op::kRsqrt: case Op::kRcp: case Op::kEx2: case Op::kLg2:
    case Op::kSin: case Op::kCos: case Op::kTanh: case Op::kCopysign: case Op::kAtom: case Op::kRed:
    case Op::kTestp:
      return true;
    default:
      return false;
  }
}
bool half2_ok(const Instr& in) {
  if (type_pair(in.type2)) return false;  // e.g. cvt from f16x2
  if (in.op == Op::kCvt) return in.type2 == Type::kF32 && (in.flags & kRn) && in.num_operands == 3;
  switch (in.op) {
    case Op::kLd: case Op::kSt: case Op::kMov: case Op::kAdd: case Op::kSub: case Op::kFma: case Op::kAbs:
    case Op::kNeg: case Op::kMin: case Op::kMax:
      return true;
    case Op::kMul: return !(in.flags & (kHi | kLo | kWide));
    default:
      return false;
  }
}

std::string refusal(const Program& p, const Instr& in, const Environment& env) {
  if (in.op == Op::kUnsupported) return "instruction " + p.texts[in.text];
  if (in.op == Op::kTex || in.op == Op::kSuld || in.op == Op::kSust) return texture_refusal(p, in, env);
  if (in.op == Op::kWmma) return wmma_refusal(p, in);
  if (in.op == Op::kCall) {
    const Function& g = p.functions[in.ops[1].id];
    const bool heap = (g.name == "malloc" || g.name == "free") && env.heap_alloc && env.heap_free;
    if (!g.has_body && g.name != "vprintf" && g.name != "__assertfail" && !heap && !device_runtime_function(g.name))
      return "call of external function " + g.name;
  }
  const bool no_mode = in.mode == Mode::kNone;
  if ((in.op == Op::kLd && in.type == Type::kNone) || ((in.op == Op::kShfl || in.op == Op::kVote) && no_mode) ||
      ((in.op == Op::kAtom || in.op == Op::kRed) && no_mode))
    return "instruction " + p.texts[in.text];
  if (in.op == Op::kMatch && (no_mode || (in.type != Type::kB32 && in.type != Type::kB64)))
    return "instruction " + p.texts[in.text];
  if (in.op == Op::kRedux) {  // the integer forms; sm_100's float min/max are not run
    const bool integer = in.type == Type::kU32 || in.type == Type::kS32 || in.type == Type::kB32;
    const bool known = in.mode == Mode::kAdd || in.mode == Mode::kMin || in.mode == Mode::kMax ||
                       in.mode == Mode::kAnd || in.mode == Mode::kOr || in.mode == Mode::kXor;
    if (!integer || !known) return "instruction " + p.texts[in.text];
  }
  if ((in.type == Type::kF16 || in.type == Type::kBF16) && !half_ok(in.op))
    return "instruction " + p.texts[in.text] + " (16-bit float arithmetic)";
  if ((type_pair(in.type) || type_pair(in.type2)) && !half2_ok(in))
    return "instruction " + p.texts[in.text] + " (packed 16-bit float arithmetic)";
  return "";
}

// The first thing in the reachable code that run() cannot do, or "".
std::string unsupported_in(const Program& p, const Reach& reach, const Environment& env) {
  for (uint32_t fi : reach.functions) {
    const Function& f = p.functions[fi];
    for (const Instr& in : f.code) {
      if (std::string why = refusal(p, in, env); !why.empty())
        return why + " (" + f.name + ", line " + std::to_string(in.line) + ")";
    }
  }
  return "";
}

void collect_symbols(const Program& p, const Reach& reach, std::set<uint32_t>* out) {
  for (uint32_t fi : reach.functions) {
    for (const Instr& in : p.functions[fi].code) {
      for (int k = 0; k < in.num_operands && k < 6; ++k) {
        const Operand& o = in.ops[k];
        if (o.kind == Operand::kSym || (o.kind == Operand::kMem && o.mem_base == 2)) out->insert(o.id);
      }
    }
  }
}

// The address of a module .global/.const variable: the environment's, or else a host copy of its
// initializer (printf's strings), with the addresses of other variables it holds filled in.
std::string resolve_variable(Context& c, uint32_t id, int depth) {
  const Symbol& s = c.p->symbols[id];
  if (c.sym_value[id] != 0) return "";
  if (!s.unsupported.empty()) return s.unsupported;
  if (depth > 16) return "initializer chain too deep at " + s.name;
  // A name with '$' is the compiler's (printf's $str), which no host code can name: the module
  // may hold another of that name from another object (nvlink merges them), so the kernel gets
  // its own copy of what its PTX says.
  const bool compilers = s.name.find('$') != std::string::npos && s.has_init;
  uint64_t a = c.env->symbol_address && !compilers ? c.env->symbol_address(s.name) : 0;
  if (a != 0) { c.sym_value[id] = a; return ""; }
  if (!s.has_init) return "no address for module variable " + s.name;
  c.own_copies.emplace_back(std::max<uint64_t>(s.size, 1) + 16, 0);
  std::vector<uint8_t>& copy = c.own_copies.back();
  memcpy(copy.data(), s.init.data(), std::min<uint64_t>(s.init.size(), s.size));
  c.sym_value[id] = (uint64_t)copy.data();
  for (auto [offset, target] : s.init_addresses) {
    if (std::string why = resolve_variable(c, target, depth + 1); !why.empty()) return why;
    uint64_t value = c.sym_value[target];
    memcpy(copy.data() + offset, &value, 8);
  }
  return "";
}

// Computes one warp-collective instruction for the threads of a warp that stopped at it; false
// after trapping.
bool run_collective(Context& c, std::vector<Thread*>& group) {
  const Thread& first = *group[0];
  const Instr& in = c.p->functions[first.func].code[first.pc];
  if (in.op == Op::kWmma && !wmma_instruction(c, group)) return false;
  uint32_t mask = 0;
  Thread* lane_thread[32] = {};
  for (Thread* t : group) { mask |= 1u << (t->linear % 32); lane_thread[t->linear % 32] = t; }
  if (in.op == Op::kWarpSync || in.op == Op::kWmma) {
    // Nothing (more) to compute: the lanes just all got here.
  } else if (in.op == Op::kActivemask) {
    for (Thread* t : group) write_reg(*t, in.ops[0], mask, Type::kB32);
  } else if (in.op == Op::kVote) {
    uint32_t ballot = 0;
    for (Thread* t : group) if (operand_value(c, *t, in.ops[1]) & 1) ballot |= 1u << (t->linear % 32);
    for (Thread* t : group) {
      switch (in.mode) {
        case Mode::kAll: write_reg(*t, in.ops[0], ballot == mask, Type::kPred); break;
        case Mode::kAny: write_reg(*t, in.ops[0], ballot != 0, Type::kPred); break;
        case Mode::kUni: write_reg(*t, in.ops[0], ballot == 0 || ballot == mask, Type::kPred); break;
        default: write_reg(*t, in.ops[0], ballot, Type::kB32); break;
      }
    }
  } else if (in.op == Op::kMatch) {  // ops = d, p, a, membermask
    const uint64_t width = type_size(in.type) == 8 ? ~0ull : 0xffffffffull;
    uint64_t v[32] = {};
    for (Thread* t : group) v[t->linear % 32] = operand_value(c, *t, in.ops[2]) & width;
    bool all_same = true;
    for (Thread* t : group) all_same = all_same && v[t->linear % 32] == v[first.linear % 32];
    for (Thread* t : group) {
      if (in.mode == Mode::kAny) {
        uint32_t same = 0;
        for (Thread* u : group) if (v[u->linear % 32] == v[t->linear % 32]) same |= 1u << (u->linear % 32);
        write_reg(*t, in.ops[0], same, Type::kB32);
      } else {
        write_reg(*t, in.ops[0], all_same ? mask : 0, Type::kB32);
        write_reg(*t, in.ops[1], all_same, Type::kPred);
      }
    }
  } else if (in.op == Op::kRedux) {  // ops = d, a, membermask
    uint32_t acc = 0;
    bool started = false;
    for (Thread* t : group) {
      const uint32_t x = (uint32_t)operand_value(c, *t, in.ops[1]);
      if (!started) { acc = x; started = true; continue; }
      switch (in.mode) {
        case Mode::kAdd: acc += x; break;
        case Mode::kAnd: acc &= x; break;
        case Mode::kOr: acc |= x; break;
        case Mode::kXor: acc ^= x; break;
        case Mode::kMin: acc = in.type == Type::kS32 ? (uint32_t)std::min((int32_t)acc, (int32_t)x) : std::min(acc, x); break;
        default: acc = in.type == Type::kS32 ? (uint32_t)std::max((int32_t)acc, (int32_t)x) : std::max(acc, x); break;
      }
    }
    for (Thread* t : group) write_reg(*t, in.ops[0], acc, Type::kB32);
  } else {  // shfl.sync: ops = d, p, a, b, c, membermask
    uint64_t a[32] = {};
    for (Thread* t : group) a[t->linear % 32] = operand_value(c, *t, in.ops[2]);
    for (Thread* t : group) {
      int lane = (int)(t->linear % 32);
      uint32_t b = (uint32_t)operand_value(c, *t, in.ops[3]), cv = (uint32_t)operand_value(c, *t, in.ops[4]);
      int clamp = (int)(cv & 0x1f), segmask = (int)((cv >> 8) & 0x1f);
      int max_lane = (lane & segmask) | (clamp & ~segmask), min_lane = lane & segmask;
      int j;
      bool ok;
      switch (in.mode) {
        case Mode::kUp: j = lane - (int)b; ok = j >= max_lane; break;
        case Mode::kDown: j = lane + (int)b; ok = j <= max_lane; break;
        case Mode::kBfly: j = lane ^ (int)b; ok = j <= max_lane; break;
        default: j = min_lane | ((int)b & ~segmask); ok = j <= max_lane; break;
      }
      if (!ok || j < 0 || j > 31) j = lane;
      // A source lane outside the member mask is undefined in PTX. Code that shuffles under a
      // partial mask (NVIDIA's reduction sample, reduce7) expects it to add nothing to a sum:
      // it reads 0 (the caller's own value, as before, doubled that sample's partial sums).
      uint64_t v = lane_thread[j] ? a[j] : 0;
      write_reg(*t, in.ops[0], v, Type::kB32);
      write_reg(*t, in.ops[1], ok, Type::kPred);
    }
  }
  for (Thread* t : group) { ++t->pc; t->state = ThreadState::kReady; }
  return true;
}

// Every live thread waits at a barrier: computes bar.red's reductions over the waiting threads,
// then lets them all go on. A thread that stopped past a plain barrier (kSynced) only counts:
// its instruction is not read again. false when no thread was waiting.
bool release_barrier(Context& c, std::vector<Thread>& threads) {
  uint32_t count = 0, waiting = 0;
  bool reducing = false;  // some thread waits at its barrier instruction (bar.red, or the general path's)
  for (Thread& t : threads) {
    if (t.state == ThreadState::kSynced) {
      ++waiting;
      t.state = ThreadState::kReady;
      continue;
    }
    if (t.state != ThreadState::kBarrier) continue;
    ++waiting;
    reducing = true;
    const Instr& in = c.p->functions[t.func].code[t.pc];
    if (in.mode != Mode::kNone && in.num_operands > 0) count += (uint32_t)(operand_value(c, t, in.ops[in.num_operands - 1]) & 1);
  }
  if (!reducing) return waiting > 0;
  for (Thread& t : threads) {
    if (t.state != ThreadState::kBarrier) continue;
    const Instr& in = c.p->functions[t.func].code[t.pc];
    switch (in.mode) {
      case Mode::kAdd: write_reg(t, in.ops[0], count, Type::kU32); break;
      case Mode::kAnd: write_reg(t, in.ops[0], count == waiting, Type::kPred); break;
      case Mode::kOr: write_reg(t, in.ops[0], count != 0, Type::kPred); break;
      default: break;
    }
    ++t.pc;
    t.state = ThreadState::kReady;
  }
  return waiting > 0;
}

// The lanes a warp-synchronous instruction names as taking part (its membermask); 0 for
// activemask and the pre-Volta forms, which take whichever lanes are there.
uint32_t member_mask(Context& c, Thread& t, const Instr& in) {
  if (in.op == Op::kWmma) return ~0u;  // .sync.aligned: the whole warp
  const bool has_mask = in.op == Op::kWarpSync || (in.op == Op::kVote && in.num_operands == 3) ||
                        (in.op == Op::kShfl && in.num_operands == 6) || (in.op == Op::kMatch && in.num_operands == 4) ||
                        (in.op == Op::kRedux && in.num_operands == 3);
  return has_mask ? (uint32_t)operand_value(c, t, in.ops[in.num_operands - 1]) : 0;
}

// Collects into `group` the threads of warp [w, end) that wait at one collective instruction;
// with `complete_only`, only a group that every live lane named in its members' masks has
// joined. false when there is none.
bool next_group(Context& c, std::vector<Thread>& threads, size_t w, size_t end, bool complete_only,
                std::vector<Thread*>& group) {
  uint32_t live = 0;
  for (size_t i = w; i < end; ++i)
    if (threads[i].state != ThreadState::kExited) live |= 1u << (i - w);
  uint32_t tried = 0;  // lanes whose group was already looked at
  for (size_t first = w; first < end; ++first) {
    const Thread& lead = threads[first];
    if (lead.state != ThreadState::kCollective || (tried >> (first - w) & 1)) continue;
    group.clear();
    uint32_t here = 0, named = 0;
    for (size_t i = first; i < end; ++i) {
      Thread& t = threads[i];
      if (t.state != ThreadState::kCollective || t.func != lead.func || t.pc != lead.pc) continue;
      group.push_back(&t);
      here |= 1u << (i - w);
      named |= member_mask(c, t, c.p->functions[t.func].code[t.pc]);
    }
    tried |= here;
    if (!complete_only || (named & live & ~here) == 0) return true;
  }
  group.clear();
  return false;
}

// Backward branches a thread takes before the other threads of its CTA get a turn: a thread
// spinning on what a later thread of its block will write (a hand-made lock or flag) lets that
// thread run, as a GPU's scheduler does. Large, so that loops that do not wait are not slowed.
constexpr uint64_t kThreadSlice = 1u << 20;

}  // namespace

CtaRun run_cta(Context& c, std::vector<Thread>& threads) {
  std::vector<Thread*> group;
  group.reserve(32);
  const bool cooperative = c.launch->cooperative;
  for (;;) {
    bool spinning = false;  // a thread gave its turn to the others, still short of a barrier
    bool meeting = false;   // a thread waits at a warp-collective instruction
    for (Thread& t : threads) {
      if (t.state != ThreadState::kReady) {
        meeting = meeting || t.state == ThreadState::kCollective;
        continue;
      }
      if (!cooperative) c.branch_budget = kThreadSlice;
      switch (run_thread(c, t)) {
        case Stop::kBarrier: t.state = ThreadState::kBarrier; break;
        case Stop::kSynced: t.state = ThreadState::kSynced; break;
        case Stop::kCollective: t.state = ThreadState::kCollective; meeting = true; break;
        case Stop::kExit: t.state = ThreadState::kExited; break;
        case Stop::kYield:  // t stays ready, where it stopped
          // A cooperative CTA whose slice is spent gives the grid a turn; a thread waiting on an
          // mbarrier (or spending its own slice) gives the other threads of its CTA one.
          if (cooperative && c.branch_budget == 0) return CtaRun::kYielded;
          spinning = true;
          break;
        case Stop::kError: return CtaRun::kFailed;
      }
    }
    if (!meeting && !spinning) {  // no warp to look at: the barrier, or the end
      if (!release_barrier(c, threads)) return CtaRun::kDone;
      continue;
    }
    bool progressed = false;
    for (size_t w = 0; meeting && w < threads.size(); w += 32) {
      const size_t end = std::min(threads.size(), w + 32);
      // Only a meeting every named lane has reached runs: lanes still short of it (at an
      // earlier collective) get there first, as on a GPU.
      while (next_group(c, threads, w, end, true, group)) {
        if (!run_collective(c, group)) return CtaRun::kFailed;
        progressed = true;
      }
    }
    // A spinning thread may yet reach the meeting or the barrier: it runs again first.
    if (progressed || spinning) continue;
    // No meeting is complete (a lane named in a mask never comes: undefined on a GPU). Run one
    // per warp as it stands rather than stop; the barriers come when no collective waits.
    for (size_t w = 0; w < threads.size(); w += 32) {
      const size_t end = std::min(threads.size(), w + 32);
      if (next_group(c, threads, w, end, false, group)) {
        if (!run_collective(c, group)) return CtaRun::kFailed;
        progressed = true;
      }
    }
    if (progressed) continue;
    if (!release_barrier(c, threads)) return CtaRun::kDone;  // every thread exited
  }
}

namespace {

// A new thread's registers, as zero as it can tell: the entry's registers some path may read
// before writing (Function::read_before_written), and the slot past them, a callee's first. The
// others keep what the last thread held, which no instruction reads. A callee's other frames are
// dropped: a call zero-fills them again as it grows the file. (Zeroing every register of every
// thread was a sixth of a small kernel's time.)
void start_registers(Thread& t, const Function& f) {
  t.regs.resize(f.num_regs + 1);
  uint64_t* r = t.regs.data();
  for (uint32_t id : f.read_before_written) r[id] = 0;
  r[f.num_regs] = 0;
}

}  // namespace

void start_cta(Context& c, uint32_t entry, std::vector<Thread>& threads, uint8_t* local) {
  const Launch& launch = *c.launch;
  const Function& f = c.p->functions[entry];
  uint32_t x = 0, y = 0, z = 0;  // counted, not divided: this runs for every thread of every CTA
  for (uint32_t i = 0; i < threads.size(); ++i) {
    Thread& t = threads[i];
    t.linear = i;
    t.tid[0] = x;
    t.tid[1] = y;
    t.tid[2] = z;
    if (++x == launch.block[0]) {
      x = 0;
      if (++y == launch.block[1]) { y = 0; ++z; }
    }
    t.state = ThreadState::kReady;
    t.carry = false;
    t.device_error = 0;
    t.func = entry;
    t.pc = 0;
    t.reg_base = 0;
    t.param_base = 0;
    t.local_base = 0;
    start_registers(t, f);
    if (t.pstack.size() < f.param_area_size) t.pstack.resize(f.param_area_size);
    t.frames.clear();
    t.r = t.regs.data();
    t.local = local + i * c.local_per_thread;
  }
}

namespace {

// Backward branches a cooperative CTA takes before the next one runs: enough that a CTA with
// work does it in few turns, few enough that one spinning on the grid barrier wastes little.
constexpr uint64_t kCooperativeSlice = 4096;
// Shared and local memory of all a cooperative grid's CTAs together (each CTA alone is bounded
// as any launch's is).
constexpr uint64_t kMaxCooperativeBytes = 1ull << 30;

// A cooperative grid: every CTA resident, taking turns until all have exited. Each CTA keeps
// its own shared and local memory, swapped into the context while it runs (a swap keeps the
// buffers where they are, so the addresses its threads hold stay valid).
Result run_cooperative(Context& c, uint32_t entry, uint64_t per_cta) {
  const Launch& launch = *c.launch;
  const uint64_t count = (uint64_t)launch.grid[0] * launch.grid[1] * launch.grid[2];
  if ((c.shared_mem.size() + c.local_mem.size()) * count > kMaxCooperativeBytes)
    return fail(Outcome::kBadLaunch, "a cooperative grid whose CTAs' shared and local memory pass " +
                                         std::to_string(kMaxCooperativeBytes >> 20) + " MiB");
  struct Cta {
    uint32_t id[3];
    std::vector<uint8_t> shared, local;
    std::vector<Thread> threads;
    bool done = false;
  };
  std::vector<Cta> ctas;
  ctas.reserve(count);
  for (uint32_t z = 0; z < launch.grid[2]; ++z)
    for (uint32_t y = 0; y < launch.grid[1]; ++y)
      for (uint32_t x = 0; x < launch.grid[0]; ++x) {
        Cta& cta = ctas.emplace_back();
        cta.id[0] = x; cta.id[1] = y; cta.id[2] = z;
        cta.shared.assign(c.shared_mem.size(), 0);
        cta.local.assign(c.local_mem.size(), 0);
        cta.threads.resize(per_cta);
        start_cta(c, entry, cta.threads, cta.local.data());
      }
  // The grid barrier's workspace: {size, arrival counter}, zeroed.
  uint32_t workspace[4] = {0, 0, 0, 0};
  c.grid_workspace = (uint64_t)(uintptr_t)workspace;
  for (size_t live = ctas.size(); live > 0;) {
    for (Cta& cta : ctas) {
      if (cta.done) continue;
      std::copy_n(cta.id, 3, c.ctaid);
      c.shared_mem.swap(cta.shared);
      c.local_mem.swap(cta.local);
      c.branch_budget = kCooperativeSlice;
      const CtaRun r = run_cta(c, cta.threads);
      c.shared_mem.swap(cta.shared);
      c.local_mem.swap(cta.local);
      if (r == CtaRun::kFailed) return c.result;
      if (r == CtaRun::kDone) { cta.done = true; --live; }
    }
  }
  return Result{};
}

Result run_ctas(Context& c, uint32_t entry_id, uint64_t per_cta);

}  // namespace

Result run(const Program& p, std::string_view entry_name, const Launch& launch, const Environment& env) {
  auto it = p.function_index.find(std::string(entry_name));
  if (it == p.function_index.end() || !p.functions[it->second].is_entry || !p.functions[it->second].has_body)
    return fail(Outcome::kBadLaunch, "no kernel named " + std::string(entry_name));
  LaunchBudget budget;
  return run_grid(p, it->second, launch, env, 0, budget);
}

Result run_grid(const Program& p, uint32_t entry_id, const Launch& launch, const Environment& env, uint32_t depth,
                LaunchBudget& budget) {
  const Function& entry = p.functions[entry_id];
  uint64_t per_cta = (uint64_t)launch.block[0] * launch.block[1] * launch.block[2];
  uint64_t ctas = (uint64_t)launch.grid[0] * launch.grid[1] * launch.grid[2];
  if (per_cta == 0 || per_cta > 1024 || ctas == 0 || launch.grid[1] > 65535 || launch.grid[2] > 65535 || launch.block[2] > 64)
    return fail(Outcome::kBadLaunch, "invalid grid or block dimensions");
  if (launch.dynamic_shared > (1u << 20)) return fail(Outcome::kBadLaunch, "dynamic shared memory too large");
  if (launch.cooperative && per_cta * ctas > kMaxCooperativeThreads)
    return fail(Outcome::kBadLaunch, "a cooperative grid of more than " + std::to_string(kMaxCooperativeThreads) + " threads");

  Reach reach;
  std::vector<int> state(p.functions.size(), 0);
  std::vector<uint64_t> memo(p.functions.size(), 0);
  reach.stack_bytes = stack_of(p, entry_id, state, memo, reach, 0);
  if (std::string u = unsupported_in(p, reach, env); !u.empty()) return fail(Outcome::kUnsupported, "unsupported " + u);

  Context c;
  c.p = &p;
  c.launch = &launch;
  c.env = &env;
  c.entry = &entry;
  c.threads_per_cta = (uint32_t)per_cta;
  c.sym_value.assign(p.symbols.size(), 0);
  DeviceLaunches children(&budget, depth);
  c.children = &children;

  // Parameters: an aligned copy of the packed buffer.
  uint64_t params_needed = 0;
  for (uint32_t id : entry.params) params_needed = std::max(params_needed, p.symbols[id].offset + p.symbols[id].size);
  if (launch.params_size < params_needed || (params_needed && !launch.params))
    return fail(Outcome::kBadLaunch, "parameter buffer has " + std::to_string(launch.params_size) + " bytes, the kernel needs " + std::to_string(params_needed));
  c.params.assign(align_up(std::max<uint64_t>(params_needed, 8), 8) + 8, 0);
  if (params_needed) memcpy(c.params.data(), launch.params, params_needed);

  // Module variables the code refers to; static shared variables laid out for this kernel.
  std::set<uint32_t> used;
  collect_symbols(p, reach, &used);
  uint64_t shared_static = 0;
  std::vector<uint32_t> extern_shared;
  for (uint32_t id : used) {
    const Symbol& s = p.symbols[id];
    switch (s.kind) {
      case SymbolKind::kGlobal: case SymbolKind::kConst:
        if (std::string why = resolve_variable(c, id, 0); !why.empty()) return fail(Outcome::kUnsupported, "unsupported: " + why);
        break;
      case SymbolKind::kShared:
        shared_static = align_up(shared_static, s.align);
        c.sym_value[id] = shared_static;
        shared_static += s.size;
        break;
      case SymbolKind::kExternShared: extern_shared.push_back(id); break;
      case SymbolKind::kKernelParam: c.sym_value[id] = (uint64_t)(c.params.data() + s.offset); break;
      default: break;
    }
  }
  c.dynamic_shared_offset = align_up(shared_static, 16);
  for (uint32_t id : extern_shared) c.sym_value[id] = c.dynamic_shared_offset;
  c.shared_size = c.dynamic_shared_offset + launch.dynamic_shared;
  if (c.shared_size > (4u << 20)) return fail(Outcome::kBadLaunch, "shared memory too large");
  c.shared_mem.assign(std::max<uint64_t>(c.shared_size, 1), 0);

  c.local_per_thread = align_up(reach.stack_bytes + (reach.recursive ? kRecursiveStackBytes : 0), 16);
  if (c.local_per_thread * per_cta > kMaxLocalPerCta) return fail(Outcome::kBadLaunch, "local memory too large");
  c.local_mem.assign(std::max<uint64_t>(c.local_per_thread * per_cta, 1), 0);

  Result r = launch.cooperative ? run_cooperative(c, entry_id, per_cta) : run_ctas(c, entry_id, per_cta);
  if (r.outcome != Outcome::kOk) return r;
  // The grid's children run after it: its shared and local memory are no one's any more (a
  // child may not be handed either), so a nest 24 grids deep holds one grid's, not 24. Its own
  // copies of module variables stay: a child may print a string its parent passed.
  std::vector<uint8_t>().swap(c.shared_mem);
  std::vector<uint8_t>().swap(c.local_mem);
  return run_children(p, env, launch.host_threads, children);
}

namespace {

// Every CTA of a launch that is not cooperative: on several host threads when it is large.
Result run_ctas(Context& c, uint32_t entry_id, uint64_t per_cta) {
  const Launch& launch = *c.launch;
  const uint64_t ctas = (uint64_t)launch.grid[0] * launch.grid[1] * launch.grid[2];
  // Each host thread has its CTA's shared and local memory: a recursive kernel's large stacks
  // use fewer threads rather than more memory.
  const uint64_t cta_bytes = c.shared_mem.size() + c.local_mem.size();
  const unsigned workers = (unsigned)std::min({(uint64_t)launch.host_threads, ctas, std::max<uint64_t>(1, kParallelBytes / cta_bytes)});
  if (workers > 1 && per_cta * ctas >= kParallelThreads) return run_ctas_in_parallel(c, entry_id, workers);
  std::vector<Thread> threads(per_cta);
  for (uint32_t z = 0; z < launch.grid[2]; ++z)
    for (uint32_t y = 0; y < launch.grid[1]; ++y)
      for (uint32_t x = 0; x < launch.grid[0]; ++x) {
        c.ctaid[0] = x; c.ctaid[1] = y; c.ctaid[2] = z;
        if (c.shared_size) std::fill(c.shared_mem.begin(), c.shared_mem.end(), 0);
        start_cta(c, entry_id, threads, c.local_mem.data());
        // Not cooperative: the budget is unbounded, so a CTA runs to its end.
        if (run_cta(c, threads) == CtaRun::kFailed) return c.result;
      }
  return Result{};
}

}  // namespace

}  // namespace vgpu::executor::sim::ptx
