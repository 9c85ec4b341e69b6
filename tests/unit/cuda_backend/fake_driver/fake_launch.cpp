// FAKE CUDA DRIVER, for tests only (see fake_cuda.h): launches. Kernels act
// by name (fill, bump, spin, hang, fault, ...), at once, and take modeled
// time on the compute engine; clusters and cooperative grids are checked as
// an sm_90 driver checks them.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "fake_internal.h"

namespace vgpu::test::fake_cuda::api {

CUresult launch_kernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                       unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                       CUstream st, void** params, void** extra);

CUresult check_cluster(CUfunction f, const unsigned grid[3], const uint32_t* given);

// A kernel with a compile-time cluster shape runs in it.
CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                        CUstream st, void** params, void** extra) {
  const unsigned grid[3] = {gx, gy, gz};
  if (CUresult r = check_cluster(f, grid, nullptr); r != CUDA_SUCCESS) return r;
  return launch_kernel(f, gx, gy, gz, bx, by, bz, shared, st, params, extra);
}

CUresult launch_kernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                       unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                       CUstream st, void** params, void** extra) {
  std::string name;
  std::vector<uint8_t> buf;
  {
    FAKE_GUARD
    if (!s.functions.count(f)) return CUDA_ERROR_INVALID_HANDLE;
    if (uint64_t{bx} * by * bz > 1024 || gx == 0 || gy == 0 || gz == 0 || shared > 232448) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    // As a GPU's driver: more than 48 KiB only once the function allows it.
    if (shared > 48 * 1024 && shared > static_cast<unsigned>(f->max_dynamic_shared))
      return CUDA_ERROR_INVALID_VALUE;
    const fatbin::Kernel& k = *f->kernel;
    name = k.name;
    buf.assign(k.param_bytes, 0);
    if (extra) {  // CU_LAUNCH_PARAM_BUFFER_POINTER, p, CU_LAUNCH_PARAM_BUFFER_SIZE, &n, END
      void* p = nullptr;
      size_t* n = nullptr;
      for (void** e = extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
        if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER) p = e[1];
        if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE) n = static_cast<size_t*>(e[1]);
      }
      if (!p || !n || *n != k.param_bytes) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(buf.data(), p, *n);
    } else if (params) {
      for (size_t i = 0; i < k.params.size(); ++i) {
        std::memcpy(buf.data() + k.params[i].offset, params[i], k.params[i].size);
      }
    } else if (k.param_bytes != 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    ++s.stats.launches;
    s.stats.last_launch_param_bytes = buf.size();
    const uint64_t cost = timeline::kernel_cost(s.knobs, k, buf, uint64_t{gx} * gy * gz);
    s.stats.modeled_kernel_ns += cost;
    model(s, timeline::Engine::kCompute, st, cost);
    auto has = [&](const char* word) { return name.find(word) != std::string::npos; };
    if (has("heap")) {
      s.heap_used = true;
    } else if (has("fill") && buf.size() >= 16) {
      uintptr_t p = 0;
      int32_t value = 0, n = 0;
      std::memcpy(&p, buf.data(), 8);
      std::memcpy(&value, buf.data() + 8, 4);
      std::memcpy(&n, buf.data() + 12, 4);
      const uint64_t threads = uint64_t{gx} * gy * gz * bx * by * bz;
      const size_t count = static_cast<size_t>(std::min<uint64_t>(threads, n > 0 ? n : 0));
      if (count > 0 && !device_range(s, p, count * 4)) {
        s.pending = CUDA_ERROR_ILLEGAL_ADDRESS;  // out of bounds, as on a GPU
      } else {
        std::fill_n(reinterpret_cast<int32_t*>(p), count, value);
      }
    } else if (has("bump") && buf.size() >= 4) {
      int32_t delta = 0;
      std::memcpy(&delta, buf.data(), 4);
      auto g = f->module->globals.find("counter");
      if (g != f->module->globals.end()) *reinterpret_cast<int32_t*>(g->second.first) += delta;
    } else if (has("say") && buf.size() >= 4) {  // printf("say %d\n", tag) in each thread
      int32_t tag = 0;
      std::memcpy(&tag, buf.data(), 4);
      const uint64_t threads = uint64_t{gx} * gy * gz * bx * by * bz;
      for (uint64_t t = 0; t < std::min<uint64_t>(threads, 64); ++t)
        s.printf_fifo += "say " + std::to_string(tag) + " thread " + std::to_string(t) + "\n";
    } else if (has("tex_read") &&
               buf.size() >= 24) {  // *out = texel (x, y) of a pitch2D float texture
      CUtexObject t = 0;
      int32_t x = 0, y = 0;
      uintptr_t out = 0;
      std::memcpy(&t, buf.data(), 8);
      std::memcpy(&x, buf.data() + 8, 4);
      std::memcpy(&y, buf.data() + 12, 4);
      std::memcpy(&out, buf.data() + 16, 8);
      auto it = s.textures.find(t);
      if (it == s.textures.end() || it->second.resType != CU_RESOURCE_TYPE_PITCH2D ||
          !device_range(s, out, 4)) {
        s.pending = CUDA_ERROR_ILLEGAL_ADDRESS;
      } else {
        const auto& p = it->second.res.pitch2D;
        const uintptr_t at =
            p.devPtr + static_cast<uintptr_t>(y) * p.pitchInBytes + static_cast<uintptr_t>(x) * 4;
        if (!device_range(s, at, 4))
          s.pending = CUDA_ERROR_ILLEGAL_ADDRESS;
        else
          std::memcpy(reinterpret_cast<void*>(out), reinterpret_cast<const void*>(at), 4);
      }
    } else if (has("hang")) {
      s.hung = true;
    } else if (has("fault")) {
      s.pending = CUDA_ERROR_ILLEGAL_ADDRESS;
    } else if (has("trap")) {
      s.pending = CUDA_ERROR_LAUNCH_FAILED;
    }
  }
  if (name.find("crash") != std::string::npos) raise(SIGSEGV);
  if (name.find("spin") != std::string::npos && buf.size() >= 8) {
    uint64_t ns = 0;
    std::memcpy(&ns, buf.data(), 8);
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<uint64_t>(ns, 5'000'000'000ull)));
  }
  return CUDA_SUCCESS;
}

// Clusters as an sm_90 driver checks them: a kernel whose shape is fixed at
// compile time takes no other, each grid dimension a multiple of the shape,
// at most 8 blocks unless the kernel allows 16.
CUresult check_cluster(CUfunction f, const unsigned grid[3], const uint32_t* given) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.functions.count(f)) return CUDA_ERROR_INVALID_HANDLE;
  const uint32_t* fixed = f->kernel->cluster[0] != 0 ? f->kernel->cluster : nullptr;
  if (fixed && given) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  const uint32_t* shape = fixed ? fixed : given;
  if (!shape) return CUDA_SUCCESS;
  const uint64_t blocks = uint64_t{shape[0]} * shape[1] * shape[2];
  if (blocks == 1) return CUDA_SUCCESS;
  for (int i = 0; i < 3; ++i)
    if (shape[i] == 0 || grid[i] % shape[i] != 0) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  if (blocks > (f->non_portable_cluster ? 16u : 8u)) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  ++s.stats.cluster_launches;
  std::copy_n(shape, 3, s.stats.last_cluster);
  return CUDA_SUCCESS;
}

// The cooperative and cluster attributes mean something to the fake; a
// cooperative grid must fit the fake device at once (132 multiprocessors, 32
// blocks each).
CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  if (!config || (config->numAttrs > 0 && !config->attrs)) return CUDA_ERROR_INVALID_VALUE;
  bool cooperative = false;
  uint32_t cluster[3] = {};
  bool has_cluster = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) cooperative = a.value.cooperative != 0;
    if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      has_cluster = true;
      cluster[0] = a.value.clusterDim.x;
      cluster[1] = a.value.clusterDim.y;
      cluster[2] = a.value.clusterDim.z;
    }
  }
  const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
  if (CUresult r = check_cluster(f, grid, has_cluster ? cluster : nullptr); r != CUDA_SUCCESS)
    return r;
  if (cooperative) {
    const uint64_t blocks = uint64_t{config->gridDimX} * config->gridDimY * config->gridDimZ;
    if (blocks > 132 * 32) return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    ++s.stats.cooperative_launches;
  }
  return launch_kernel(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                       config->blockDimY, config->blockDimZ, config->sharedMemBytes,
                       config->hStream, params, extra);
}

}  // namespace vgpu::test::fake_cuda::api
