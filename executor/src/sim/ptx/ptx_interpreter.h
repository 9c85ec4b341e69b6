// Runs a kernel of a parsed PTX module over a grid, on the CPU: CTAs in order, on one or more
// host threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "ptx_program.h"

namespace vgpu::executor::sim::ptx {

// Threads: with several host threads (Launch::host_threads), symbol_address, texture_read,
// texture_fetch and surface_access may be called from all of them at once: they must only read
// tables that do not change during a run (and the memory the kernel addresses, as a GPU's
// texture unit does). print, heap_alloc and heap_free are called one at a time.
struct Environment {
  // Device address of a module-scope .global or .const variable of this module, by its PTX name;
  // 0 if unknown (then the launch fails with kUnsupported naming it). A variable with an
  // initializer (e.g. printf's format strings) that has no address gets a host copy per run.
  std::function<uint64_t(std::string_view name)> symbol_address;
  // What the kernel printed (device printf: the PTX calls `vprintf(fmt, args)`), formatted as
  // printf would, one call per printf.
  std::function<void(std::string_view text)> print;

  // The texture unit, for tex, suld and sust on texture and surface objects (the handle a
  // kernel got as a cudaTextureObject_t / cudaSurfaceObject_t). Without it a kernel that uses
  // them is refused. Each returns false when `handle` is no texture (surface) object of this
  // context, or a surface access traps; the kernel then traps.
  // texture_read: tex's four 32-bit results (floats, or integer elements widened) at `coord` (x,
  // y, z; a cubemap's direction), in `layer` of a layered texture, at level of detail `lod`.
  std::function<bool(uint64_t handle, const float coord[3], int layer, float lod, uint32_t out[4])>
      texture_read;
  // texture_fetch: tex.1d with an integer coordinate (tex1Dfetch): element `index`.
  std::function<bool(uint64_t handle, int64_t index, uint32_t out[4])> texture_fetch;
  // surface_access: `size` bytes at byte `x` of row `y` of slice (layer) `z`, read into or
  // written from `data`; boundary: 0 zero, 1 clamp, 2 trap (cudaSurfaceBoundaryMode).
  std::function<bool(uint64_t handle, int64_t x, int64_t y, int64_t z, void* data, size_t size,
                     int boundary, bool write)>
      surface_access;

  // The device heap (malloc, free, new and delete in a kernel): heap_alloc returns a global
  // address, or 0 when the heap is full; heap_free takes back what heap_alloc gave and ignores
  // anything else. Without both, a kernel that calls malloc or free is refused.
  std::function<uint64_t(uint64_t bytes)> heap_alloc;
  std::function<void(uint64_t address)> heap_free;
};

struct Launch {
  uint32_t grid[3], block[3];
  uint64_t dynamic_shared = 0;   // bytes of `extern __shared__` memory
  const void* params = nullptr;  // the packed parameter buffer (each param at its natural alignment, as CUDA packs them)
  size_t params_size = 0;
  // cudaLaunchCooperativeKernel: every CTA is resident at once and cooperative groups' grid
  // barrier works (the CTAs take turns, each until its threads wait or a slice of its loops
  // is spent). At most kMaxCooperativeThreads threads in all: what the sim's device holds
  // resident (132 SMs of 2048 threads), and a bound on the worker's memory.
  bool cooperative = false;
  // Host threads the CTAs may run on (a cooperative grid's take turns on one). CTAs start in
  // order, so one that waits on an earlier CTA's flag (CUB's look-back) sees it set in time;
  // atomics are atomic across them, and the environment's functions are called one at a time.
  unsigned host_threads = 1;
};
inline constexpr uint64_t kMaxCooperativeThreads = 132 * 2048;

enum class Outcome { kOk, kUnsupported, kTrap, kBadLaunch, kIllegalAddress };
struct Result {
  Outcome outcome = Outcome::kOk;
  std::string message;
};

// Runs every block and thread of the kernel. Global and generic addresses are plain pointers in
// this process, so global loads/stores dereference them directly; shared and local memory live in
// host buffers (one per CTA, one frame per thread), and cvta converts between their window
// offsets and those host addresses. kUnsupported names the first instruction, special register or
// feature the interpreter does not implement; it is checked for the entry and every .func it can
// call before anything runs, so a kernel runs completely or not at all. kTrap: `trap`, a failed
// assert (message: file, line, function, block, thread, expression), an out-of-range shared or
// local access, or a call chain deeper than the interpreter's limit. kIllegalAddress: a global
// or generic access in the first page (a null pointer, or a member of one); any other wild
// pointer faults the process that runs the interpreter, as a GPU's access faults its context.
Result run(const Program& p, std::string_view entry, const Launch& launch, const Environment& env);

}  // namespace vgpu::executor::sim::ptx
