// FAKE CUDA DRIVER, for tests only (see fake_cuda.h): reset, the knobs from
// the environment, what tests read back.
#include <cstdlib>
#include <string>

#include "fake_cuda.h"
#include "fake_state.h"
#include "fake_timeline.h"

namespace vgpu::test::fake_cuda {

void reset(const Knobs& knobs) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto& [p, n] : s.allocations) std::free(reinterpret_cast<void*>(p));
  for (CUstream_st* x : s.streams) delete x;
  for (CUevent_st* x : s.events) delete x;
  for (CUfunc_st* x : s.functions) delete x;
  for (CUmod_st* m : s.modules) {
    for (auto& [name, g] : m->globals) std::free(g.first);
    delete m;
  }
  s.allocations.clear();
  s.textures.clear();
  s.streams.clear();
  s.events.clear();
  s.functions.clear();
  s.modules.clear();
  s.registered.clear();
  s.knobs = knobs;
  s.stats = Stats{};
  s.heap_used = false;
  s.initialized = false;
  s.sticky = s.pending = CUDA_SUCCESS;
  s.hung = false;
  s.used = 0;
  s.default_until = s.issued_until = 0;
  timeline::reset(knobs);
}

Knobs knobs_from_env() {
  Knobs k;
  auto num = [](const char* name, long long fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::atoll(v) : fallback;
  };
  auto str = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  k.device_count = static_cast<int>(num("VGPU_FAKE_CUDA_DEVICES", k.device_count));
  k.driver_version = static_cast<int>(num("VGPU_FAKE_CUDA_DRIVER_VERSION", k.driver_version));
  k.init_fails = num("VGPU_FAKE_CUDA_NO_INIT", 0) != 0;
  k.missing_entry = str("VGPU_FAKE_CUDA_MISSING");
  k.skew_kernel = str("VGPU_FAKE_CUDA_SKEW");
  k.memory_bytes = static_cast<uint64_t>(num("VGPU_FAKE_CUDA_MEMORY_MIB", 1024)) << 20;
  k.register_fails = num("VGPU_FAKE_CUDA_NO_REGISTER", 0) != 0;
  timeline::knobs_from_env(&k);
  return k;
}

Stats stats() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.stats;
}

void release_hang() { state().hung = false; }

}  // namespace vgpu::test::fake_cuda
