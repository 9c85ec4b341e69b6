// Internal to the interpreter: the state of a launch, of a CTA and of one thread.
#pragma once

#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ptx_interpreter.h"
#include "ptx_values.h"

namespace vgpu::executor::sim::ptx {

constexpr uint32_t kMaxCallDepth = 256;

// kBarrier: waits at the barrier at t.pc (bar.red, which its release computes); kSynced: waits
// at a plain one it has already stepped over (the fast runner's bar.sync).
enum class ThreadState : uint8_t { kReady, kBarrier, kSynced, kCollective, kExited };

struct Frame {  // a caller's state, saved while a .func runs
  uint32_t func, pc, reg_base, param_base;
  uint64_t local_base;
};

struct Thread {
  uint32_t tid[3];
  uint32_t linear;
  ThreadState state;
  bool carry;
  uint32_t func, pc, reg_base, param_base;
  uint64_t local_base;  // current frame's offset in this thread's local memory
  uint32_t device_error;  // the device runtime's last error for this thread (cudaGetLastError)
  uint64_t* r;          // registers of the current frame (regs.data() + reg_base)
  uint8_t* local;       // this thread's local memory (host address)
  std::vector<uint64_t> regs;
  std::vector<uint8_t> pstack;  // .param areas of the frames
  std::vector<Frame> frames;
};

// Grids a running grid launched from the device (dynamic parallelism: ptx_device_launch.cpp),
// shared by the host threads that run its CTAs. They run after it, in launch order: a parent
// cannot wait for its children since CUDA 12 (no device-side cudaDeviceSynchronize), so
// running them once it has finished is a schedule a GPU could have chosen.
struct ChildLaunch {
  // A grid, or a device-side cudaMemcpyAsync / cudaMemsetAsync, which keeps its place in the
  // order among the launches.
  enum class Kind : uint8_t { kKernel, kCopy, kSet };
  Kind kind = Kind::kKernel;
  uint64_t dst = 0, src = 0, bytes = 0;
  int32_t value = 0;
  uint32_t entry = 0;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  uint32_t dynamic_shared = 0;
  std::vector<uint8_t> params;  // the parameter buffer the parent filled
};
// What every grid of one host launch holds in parameter buffers together: the bound on the
// worker's memory however the launches nest.
struct LaunchBudget {
  std::atomic<uint64_t> bytes{0}, count{0};
};
struct DeviceLaunches {
  explicit DeviceLaunches(LaunchBudget* b, uint32_t d) : budget(b), depth(d) {}
  ~DeviceLaunches() { budget->bytes -= bytes; budget->count -= count; }  // what is left goes back
  DeviceLaunches(const DeviceLaunches&) = delete;
  DeviceLaunches& operator=(const DeviceLaunches&) = delete;
  std::mutex mu;
  LaunchBudget* budget;
  std::unordered_map<uint64_t, ChildLaunch> buffers;  // handed out, not launched yet (by address)
  std::vector<ChildLaunch> launched;                  // in launch order
  uint64_t bytes = 0, count = 0;  // this grid's part of the budget
  uint32_t depth = 0;             // of the grid that launches these (0: launched by the host)
};

struct Context {
  const Program* p;
  const Launch* launch;
  const Environment* env;
  const Function* entry;
  std::vector<uint64_t> sym_value;  // global/const: host address; shared: offset; kernel param: host address
  std::deque<std::vector<uint8_t>> own_copies;  // deque: references stay valid as it grows
  std::vector<uint8_t> params;       // the launch's parameter buffer (aligned copy)
  std::vector<uint8_t> shared_mem;   // this CTA's shared memory
  uint64_t shared_size = 0, dynamic_shared_offset = 0;
  std::vector<uint8_t> local_mem;    // every thread's local memory for the current CTA
  uint64_t local_per_thread = 0;
  uint32_t ctaid[3] = {0, 0, 0};
  uint32_t threads_per_cta = 0;
  uint64_t clock = 0;
  // Cooperative launches: the grid's workspace (%envreg1:%envreg2; 0 otherwise, and
  // cooperative groups' grid.sync() traps), and the backward branches the running CTA may
  // still take before it yields to the next.
  uint64_t grid_workspace = 0;
  uint64_t branch_budget = UINT64_MAX;
  DeviceLaunches* children = nullptr;
  Result result;
};

enum class Stop : uint8_t { kBarrier, kSynced, kCollective, kExit, kYield, kError };

enum class CtaRun { kDone, kYielded, kFailed };

// Sets a CTA's threads fresh at the entry, each with its frame of `local`.
void start_cta(Context& c, uint32_t entry, std::vector<Thread>& threads, uint8_t* local);

// Runs one CTA (c.ctaid, c.shared_mem, c.local_mem) to completion, or until its branch budget is
// spent (kYielded: called again, it goes on where it stopped); kFailed with c.result set on a trap
// or an unsupported path.
CtaRun run_cta(Context& c, std::vector<Thread>& threads);

// A grid with at least this many threads runs its CTAs on several host threads; below it the
// threads would cost more than they save.
constexpr uint64_t kParallelThreads = 4096;

// Runs every CTA of the launch set up in `c` (its symbols, parameters and memory sizes), on
// `workers` host threads taking CTAs in order; the first failure (lowest CTA) is the result.
Result run_ctas_in_parallel(const Context& c, uint32_t entry, unsigned workers);

// Runs one thread until it reaches a barrier (kBarrier: left at t.pc; kSynced: a plain one, t.pc
// past it), a warp-collective instruction (left unexecuted at t.pc), its end, or kYield: at a branch's target, the end of its CTA's branch budget; after
// an mbarrier wait, a phase not yet complete; after a volatile load or store (warp-synchronous
// code such as an unrolled last warp of a reduction relies on the other lanes having made the
// same access before the next one: each lane makes one per turn). kError after setting c.result.
Stop run_thread(Context& c, Thread& t);

// The value of an operand that is not memory (register, immediate, special register, symbol).
// Inline for the common operands: the interpreter reads two or three per instruction.
uint64_t operand_value_slow(Context& c, Thread& t, const Operand& o);
[[gnu::always_inline]] inline uint64_t operand_value(Context& c, Thread& t, const Operand& o) {
  if (o.kind == Operand::kReg && !o.negate) return t.r[o.id];
  if (o.kind == Operand::kImm) return (uint64_t)o.value;
  return operand_value_slow(c, t, o);
}
// Stores a value into a destination register, normalized for the type (sign- or zero-extended).
[[gnu::always_inline]] inline void write_reg(Thread& t, const Operand& o, uint64_t v, Type ty) {
  if (o.kind == Operand::kReg) t.r[o.id] = normalize(v, ty);
}

// A parameter's bytes in the thread's .param stack, for the frame at `param_base`.
inline uint8_t* param_slot(Thread& t, const Symbol& s, uint32_t param_base) {
  return t.pstack.data() + param_base + s.offset;
}

// A call of a function without a body (ptx_builtin_calls.cpp): vprintf, __assertfail, malloc,
// free, the device runtime's calls. false after setting c.result (a refused name included).
bool builtin_call(Context& c, Thread& t, const Instr& in, const Function& callee);

// Ends the launch with Outcome::kTrap: `why`, the instruction and its line. Returns false.
bool trap(Context& c, const Instr& in, const std::string& why);

// The host address of memory operand `o` of `bytes` in `space`, checked against the window it
// lives in; null after trapping.
uint8_t* address_in(Context& c, Thread& t, const Instr& in, const Operand& o, uint64_t bytes, Space space);

// tex, suld and sust, through the environment's texture unit; false after trapping.
bool texture_instruction(Context& c, Thread& t, const Instr& in);

// mbarrier.* and cp.async.mbarrier.arrive. kWaiting: a test_wait or try_wait found the phase
// not complete (its predicate is written false): the thread lets the others of its CTA run.
enum class Barrier { kDone, kWaiting, kFailed };
Barrier mbarrier_instruction(Context& c, Thread& t, const Instr& in);

// wmma (ptx_wmma.cpp): why an instruction cannot run ("" if it can); and one run by the lanes
// of a warp that all reached it (false after trapping).
std::string wmma_refusal(const Program& p, const Instr& in);
bool wmma_instruction(Context& c, std::vector<Thread*>& group);

// A kernel's address as a value (`mov.u64 %rd, kernel`): what the device runtime's launch calls
// take, outside any address a kernel can reach.
inline constexpr uint64_t kFunctionAddressBase = 0xfff0000000000000ull;
inline uint64_t function_address(uint32_t id) { return kFunctionAddressBase | id; }

// The device runtime's calls (cudadevrt's __cudaCDP2* and cudaGetParameterBuffer/LaunchDevice
// names, as `-rdc=true` code calls them): true if `name` is one the interpreter runs.
bool device_runtime_function(std::string_view name);
// Runs one: `slots` are the call's parameters (`sizes` their bytes), `ret` its return slot
// (null if none). false after setting c.result.
bool device_runtime_call(Context& c, Thread& t, const Function& callee, const std::vector<const uint8_t*>& slots,
                         const std::vector<uint64_t>& sizes, uint8_t* ret, uint64_t ret_size);
// Runs the grids a finished grid launched, each with its own children after it; the first
// failure is the result.
Result run_children(const Program& p, const Environment& env, unsigned host_threads, DeviceLaunches& children);
// run() for the kernel p.functions[entry] at nesting depth `depth` (0: launched by the host),
// its device launches' parameters counted in `budget`.
Result run_grid(const Program& p, uint32_t entry, const Launch& launch, const Environment& env, uint32_t depth,
                LaunchBudget& budget);

// Device printf: formats vprintf(fmt, args) as printf would.
std::string format_printf(const char* fmt, const uint8_t* args);

}  // namespace vgpu::executor::sim::ptx
