// FAKE CUDA DRIVER, for tests only: what its files share besides its State
// (fake_state.h): the modeled timeline's helpers (fake_cuda.cpp), the guard
// each entry point starts with, and the entry points themselves, declared
// with <cuda.h>'s types (fake_cuda.cpp: device, context, streams, events,
// modules; fake_memory.cpp: memory, copies, textures; fake_launch.cpp:
// launches). Not for tests to include.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>

#include "driver_api.h"
#include "fake_state.h"
#include "fake_timeline.h"

namespace vgpu::test::fake_cuda {

using timeline::now_ns;

// Where a stream's last end is kept: the special streams (and any handle the
// fake did not make) share the process's default stream. mu held.
uint64_t* stream_until(State& s, CUstream st);
// Where st's end is kept, after CUDA's rule for the legacy default stream:
// its work waits for every blocking stream's, and a blocking stream's waits
// for its. mu held.
uint64_t* stream_ready(State& s, CUstream st);
// Puts work of cost_ns on the modeled device's timeline. mu held.
void model(State& s, timeline::Engine engine, CUstream st, uint64_t cost_ns);
void model_copy(State& s, CUstream st, size_t n);
// Whether [p, p + n) lies in one allocation or module variable. mu held.
bool device_range(State& s, uintptr_t p, size_t n);
// A wait: until the modeled time `until`, then while a hang() runs; then
// reports a faulting kernel's error. Never with mu held.
CUresult wait_for_gpu(uint64_t until = 0);

// wait_for_gpu() until what until_of(s) reads under mu (nothing: a bad handle).
template <class F>
CUresult wait_for(F until_of) {
  std::optional<uint64_t> until;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    until = until_of(s);
  }
  return until ? wait_for_gpu(*until) : CUDA_ERROR_INVALID_HANDLE;
}

// Every entry point that needs the driver up and healthy starts with it.
#define FAKE_GUARD                                       \
  State& s = state();                                    \
  std::lock_guard<std::mutex> lock(s.mu);                \
  if (!s.initialized) return CUDA_ERROR_NOT_INITIALIZED; \
  if (s.sticky != CUDA_SUCCESS) return s.sticky;

// --- the entry points (names and types from <cuda.h>) ---------------------------
namespace api {
#define FAKE_DECLARE(name, required) decltype(::name) name;
VGPU_CUDA_DRIVER_FUNCTIONS(FAKE_DECLARE)
#undef FAKE_DECLARE
}  // namespace api

}  // namespace vgpu::test::fake_cuda
