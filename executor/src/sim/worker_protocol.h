// What the sim backend and its worker process (vgpu-sim-worker) say to each
// other over a SOCK_SEQPACKET socketpair: one message per packet, a fixed
// header struct followed by its variable parts. Both sides are built from the
// same tree, so the version only guards against a stale worker binary.
//
// Start:  vgpu-sim-worker run <slot base hex> <slot bytes hex> [plugin...]
//           fd 3: the socket; fd 4: the context's memfd, mapped at the base
//         vgpu-sim-worker check [plugin...]     (fd 3 only; loads and exits)
//   worker -> backend  Ready
// Then, in order:
//   backend -> worker  SymbolsReset, Symbol*   (the context's variables)
//   backend -> worker  TexturesReset, Texture* (its texture and surface objects)
//   backend -> worker  PtxChunk* (a module's PTX, once, before its first launch)
//   backend -> worker  LaunchBatch -> worker -> backend  Printf*, BatchDone
//                       or worker -> backend  Printf*, BatchDone (not final), Fault, and it dies
//
// A batch carries consecutive launches of the context (one or more) in one
// packet, so a stream of small kernels costs one round trip per batch, not
// per kernel. The worker runs them in order and stops early (the rest are
// not run; the backend queues them again) after a launch that
//   - failed in a way that faults the context (plug-in error), or was modeled
//     past the watchdog;
//   - brought the batch's modeled time to budget_ns (the scheduler's slice);
//   - ended past slice_ns of real time since the batch began: so each launch
//     starts within slice_ns of the last result the backend can see, and the
//     backend's watchdog (slice_ns + the per-launch watchdog) stays per launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "vgpu/executor/texture.h"

namespace vgpu::executor::sim::wire {

inline constexpr uint32_t kVersion = 7;
inline constexpr int kSocketFd = 3;
inline constexpr int kMemFd = 4;
inline constexpr uint32_t kMaxNameBytes = 16384;
inline constexpr uint32_t kMaxParamBytes = 32764;
inline constexpr size_t kMaxMessageBytes = 64 * 1024;
inline constexpr uint32_t kMaxBatch = 256;  // launches in one LaunchBatch

enum class Op : uint32_t {
  kReady = 1,
  kSymbolsReset = 2,
  kSymbol = 3,
  kLaunch = 4,      // a record inside a LaunchBatch
  kLaunchDone = 5,  // a record inside a BatchDone
  kFault = 6,
  kLaunchBatch = 7,
  kBatchDone = 8,
  kPrintf = 9,
  kTexturesReset = 10,
  kTexture = 11,
  kPtxChunk = 12,
};

struct Ready {
  Op op = Op::kReady;
  uint32_t version = kVersion;
  int32_t ok = 0;  // 1: mapped and every plug-in loaded
  char message[500] = {};  // why not, NUL-terminated
};

struct SymbolsReset {
  Op op = Op::kSymbolsReset;
  uint32_t reserved = 0;
};

struct Symbol {  // followed by name_bytes of name (no NUL)
  Op op = Op::kSymbol;
  uint32_t name_bytes = 0;
  uint64_t module = 0;
  uint64_t address = 0;
  uint64_t size = 0;
};

struct TexturesReset {
  Op op = Op::kTexturesReset;
  uint32_t reserved = 0;
};

// One texture or surface object, as the backend checked it.
struct Texture {
  Op op = Op::kTexture;
  uint32_t reserved = 0;
  uint64_t handle = 0;
  TextureDesc desc;
};

// Part of a module's PTX text, which the worker interprets for a kernel no
// plug-in implements (ptx/ptx_interpreter.h). Chunks arrive in order; the
// one with offset 0 starts the text, the one that reaches total ends it.
struct PtxChunk {  // followed by `bytes` of text
  Op op = Op::kPtxChunk;
  uint32_t bytes = 0;
  uint64_t module = 0;
  uint64_t offset = 0;
  uint64_t total = 0;
};
inline constexpr size_t kMaxPtxChunk = kMaxMessageBytes - sizeof(PtxChunk);
// PTX text a worker keeps for all its modules together.
inline constexpr uint64_t kMaxWorkerPtxBytes = 512ull << 20;

struct LaunchBatch {  // followed by `count` Launch records
  Op op = Op::kLaunchBatch;
  uint32_t count = 0;       // 1 .. kMaxBatch
  uint64_t budget_ns = 0;   // stop once the launches' modeled time reaches this
  uint64_t watchdog_ns = 0;  // a launch modeled past this faults the context: stop after it
  uint64_t slice_ns = 0;    // stop once this much real time has passed since the batch began
  uint64_t heap_bytes = 0;  // the device heap's size (cudaLimitMallocHeapSize); the backend
                            // changes it only while no kernel has used the heap
};

inline constexpr uint8_t kLaunchCooperative = 1;  // every block resident: grid-wide sync works

// Each record: the header, name_bytes of kernel name, params_bytes of params,
// then zeros up to a multiple of 8 bytes (record_bytes()).
struct Launch {
  Op op = Op::kLaunch;
  uint32_t name_bytes = 0;
  uint64_t module = 0;
  uint32_t grid[3] = {};
  uint32_t block[3] = {};
  uint64_t shared_mem = 0;
  uint64_t modeled_ns = 0;
  uint32_t params_bytes = 0;
  uint8_t cluster[3] = {1, 1, 1};  // the thread block cluster's shape (1..16 each)
  uint8_t flags = 0;               // kLaunchCooperative

};

enum class Outcome : int32_t {
  kOk = 0,
  kNoImplementation = 1,  // no plug-in exports vgpu_sim_<name>
  kPluginError = 2,       // the implementation returned nonzero (plugin_rc)
  kBadRequest = 3,        // malformed message
  kAssert = 4,            // a device assert failed (device_assert)
  kTrap = 5,              // the interpreted kernel executed `trap`
  kIllegalAddress = 6,    // the interpreted kernel read or wrote through a null pointer
};

inline constexpr uint32_t kHeapUsed = 1;  // LaunchDone::flags: a kernel has used the device heap

struct LaunchDone {
  Op op = Op::kLaunchDone;
  Outcome outcome = Outcome::kOk;
  int32_t plugin_rc = 0;
  uint32_t flags = 0;  // kHeapUsed
  uint64_t modeled_ns = 0;
  uint64_t ran_ns = 0;  // real time the CPU implementation took, measured in the worker
};

struct BatchDone {  // followed by `count` LaunchDone, one per launch that ran, in order
  Op op = Op::kBatchDone;
  uint32_t count = 0;
  uint32_t final = 1;  // 0: sent as the worker dies of a fault in launch `count`; a Fault follows
  uint32_t reserved = 0;
};

// What the batch's kernels printed (vgpu_sim_launch::device_printf, and
// device_assert's messages), in order; followed by `bytes` of text.
struct Printf {
  Op op = Op::kPrintf;
  uint32_t bytes = 0;
  uint32_t stream = 1;  // 1: stdout (printf), 2: stderr (assert messages)
  uint32_t reserved = 0;
};
inline constexpr size_t kMaxPrintfChunk = kMaxMessageBytes - sizeof(Printf);
// Output one batch may print; the rest is dropped (a GPU's printf FIFO is
// 1 MiB by default).
inline constexpr size_t kMaxPrintfPerBatch = 4u << 20;

// Sent from the worker's signal handler when a kernel faults (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL, SIGABRT); the worker then dies of that signal.
struct Fault {
  Op op = Op::kFault;
  int32_t signal = 0;
  uint64_t address = 0;  // siginfo's si_addr
};

static_assert(std::is_trivially_copyable_v<Fault> && sizeof(Fault) == 16);
static_assert(std::is_trivially_copyable_v<Ready> && sizeof(Ready) == 512);
static_assert(std::is_trivially_copyable_v<SymbolsReset> && sizeof(SymbolsReset) == 8);
static_assert(std::is_trivially_copyable_v<Symbol> && sizeof(Symbol) == 32);
static_assert(std::is_trivially_copyable_v<Launch> && sizeof(Launch) == 64);
static_assert(std::is_trivially_copyable_v<Texture> && sizeof(Texture) <= kMaxMessageBytes);
static_assert(std::is_trivially_copyable_v<PtxChunk> && sizeof(PtxChunk) == 32);
static_assert(std::is_trivially_copyable_v<LaunchDone> && sizeof(LaunchDone) == 32);
static_assert(std::is_trivially_copyable_v<LaunchBatch> && sizeof(LaunchBatch) == 40);
static_assert(std::is_trivially_copyable_v<BatchDone> && sizeof(BatchDone) == 16);

constexpr size_t record_bytes(size_t name_bytes, size_t params_bytes) {
  return (sizeof(Launch) + name_bytes + params_bytes + 7) & ~size_t{7};
}
// A batch of one launch of the longest name and parameters always fits.
static_assert(sizeof(LaunchBatch) + record_bytes(kMaxNameBytes, kMaxParamBytes) <= kMaxMessageBytes);
inline constexpr size_t kMaxBatchDoneBytes = sizeof(BatchDone) + kMaxBatch * sizeof(LaunchDone);

}  // namespace vgpu::executor::sim::wire
