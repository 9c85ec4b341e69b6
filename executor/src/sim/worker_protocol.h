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
//   backend -> worker  Launch  -> worker -> backend  LaunchDone
//                                  or worker -> backend  Fault, and it dies
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace vgpu::executor::sim::wire {

inline constexpr uint32_t kVersion = 1;
inline constexpr int kSocketFd = 3;
inline constexpr int kMemFd = 4;
inline constexpr uint32_t kMaxNameBytes = 16384;
inline constexpr uint32_t kMaxParamBytes = 32764;
inline constexpr size_t kMaxMessageBytes = 64 * 1024;

enum class Op : uint32_t {
  kReady = 1,
  kSymbolsReset = 2,
  kSymbol = 3,
  kLaunch = 4,
  kLaunchDone = 5,
  kFault = 6,
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

struct Launch {  // followed by name_bytes of kernel name, then params_bytes of params
  Op op = Op::kLaunch;
  uint32_t name_bytes = 0;
  uint64_t module = 0;
  uint32_t grid[3] = {};
  uint32_t block[3] = {};
  uint64_t shared_mem = 0;
  uint64_t modeled_ns = 0;
  uint32_t params_bytes = 0;
  uint32_t reserved = 0;
};

enum class Outcome : int32_t {
  kOk = 0,
  kNoImplementation = 1,  // no plug-in exports vgpu_sim_<name>
  kPluginError = 2,       // the implementation returned nonzero (plugin_rc)
  kBadRequest = 3,        // malformed message
};

struct LaunchDone {
  Op op = Op::kLaunchDone;
  Outcome outcome = Outcome::kOk;
  int32_t plugin_rc = 0;
  uint32_t reserved = 0;
  uint64_t modeled_ns = 0;
};

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
static_assert(std::is_trivially_copyable_v<LaunchDone> && sizeof(LaunchDone) == 24);
static_assert(sizeof(Launch) + kMaxNameBytes + kMaxParamBytes <= kMaxMessageBytes);

}  // namespace vgpu::executor::sim::wire
