// FAKE CUDA DRIVER, for tests only: its state, shared by the files of the
// fake (the entry points in fake_cuda.cpp, reset and the knobs in
// fake_control.cpp). Not for tests to include.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "fake_cuda.h"
#include "vgpu/fatbin/fatbin.h"

// The driver's opaque handle types, defined by this fake.
struct CUctx_st {
  int device = 0;
};
struct CUstream_st {
  unsigned flags = 0;
  uint64_t until = 0;  // when its last issued work ends (modeled)
};
struct CUevent_st {
  unsigned flags = 0;
  bool recorded = false;
  uint64_t ns = 0;
};
struct CUmod_st {
  vgpu::fatbin::Module image;
  std::map<std::string, std::pair<uint8_t*, size_t>> globals;  // name -> storage
};
struct CUfunc_st {
  CUmod_st* module = nullptr;
  const vgpu::fatbin::Kernel* kernel = nullptr;
  bool non_portable_cluster = false;  // CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
  int max_dynamic_shared = 48 * 1024;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
};

namespace vgpu::test::fake_cuda {

struct State {
  std::mutex mu;
  Knobs knobs;
  Stats stats;
  bool initialized = false;
  CUresult sticky = CUDA_SUCCESS;   // reported by every call once set
  CUresult pending = CUDA_SUCCESS;  // a faulting kernel's error, until the next wait
  bool heap_used = false;  // a heap() kernel ran: the heap's size is fixed
  std::string printf_fifo;  // what kernels printed, written to stdout at the next wait (as a GPU's driver does)
  std::map<CUtexObject, CUDA_RESOURCE_DESC> textures;
  CUtexObject next_texture = 0x1000;
  std::atomic<bool> hung{false};
  uint64_t used = 0;
  std::map<uintptr_t, size_t> allocations;  // address -> size
  std::set<CUstream_st*> streams;
  std::set<CUevent_st*> events;
  std::set<CUmod_st*> modules;
  std::set<CUfunc_st*> functions;
  std::map<uintptr_t, size_t> registered;
  CUctx_st primary;
  uint64_t default_until = 0;  // the null stream's (and CU_STREAM_LEGACY's) last end
  uint64_t issued_until = 0;   // the last end of any work this process issued
};

// The one State of the process (fake_cuda.cpp).
State& state();

}  // namespace vgpu::test::fake_cuda
