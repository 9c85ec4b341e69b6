// Kernel launches and function attributes. Arguments are packed as the
// kernel's metadata lays them out and the launch is queued without waiting;
// failures surface at the next synchronising call, as with CUDA.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "device_output.h"
#include "driver_state.h"
#include "managed_memory.h"
#include "stream_capture.h"
#include "log.h"

using namespace vgpu;
using namespace vgpu::driver;

namespace {

struct Config {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_mem;
  CUstream stream;
  bool cooperative = false;  // cuLaunchCooperativeKernel: every block resident at once
  unsigned cluster[3] = {1, 1, 1};  // thread block cluster shape
  bool cluster_given = false;       // by CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
};

// What CUDA itself rejects before a launch reaches the device.
CUresult check_config(const Config& c) {
  const uint64_t threads = uint64_t{c.block[0]} * c.block[1] * c.block[2];
  if (c.grid[0] == 0 || c.grid[1] == 0 || c.grid[2] == 0 || threads == 0 || threads > 1024 ||
      c.block[2] > 64 || c.grid[1] > 65535 || c.grid[2] > 65535)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// Dynamic shared memory past 48 KiB needs the kernel's opt-in
// (cudaFuncSetAttribute, at most the device's opt-in maximum), and a launch
// may ask no more than the kernel opted in to: refused at the launch, as a
// GPU's driver does (the host would refuse only what no block can have, and
// only when the kernel's turn came, as an error of a later call). Without
// the opt-in the bound is 48 KiB less the kernel's static shared memory,
// which only the host knows: 48 KiB is checked here.
CUresult check_shared_memory(const Function& f, const Config& c) {
  const unsigned allowed = f.max_dynamic_shared > 0 ? static_cast<unsigned>(f.max_dynamic_shared) : 48u * 1024;
  return c.shared_mem > allowed ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

// The function a handle names, if it is live. Launches check the same handle
// again and again: the answer is kept per thread until a module is unloaded.
Function* live_function(CUfunction fn) {
  struct Checked {
    const void* handle = nullptr;
    uint64_t generation = 0;
    Function* function = nullptr;
  };
  static thread_local Checked last __attribute__((tls_model("initial-exec")));
  Objects& o = Objects::instance();
  if (last.function && last.handle == fn && last.generation == o.generation()) return last.function;
  std::lock_guard lock(o.mutex());
  Function* f = o.function(fn);
  if (f) last = {fn, o.generation(), f};
  return f;
}

// The packed argument buffer from kernelParams (one pointer per parameter) or
// from `extra` (a buffer already packed, CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE).
// `out` holds at least layout.param_bytes.
CUresult pack(const fatbin::Kernel& layout, void** params, void** extra, uint8_t* out) {
  if (layout.param_bytes) std::memset(out, 0, layout.param_bytes);  // `out` may be null then
  if (params) {
    for (size_t i = 0; i < layout.params.size(); ++i) {
      if (!params[i]) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(out + layout.params[i].offset, params[i], layout.params[i].size);
    }
    return CUDA_SUCCESS;
  }
  if (!extra) return layout.params.empty() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  const void* buffer = nullptr;
  size_t size = 0;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = *static_cast<size_t*>(extra[i + 1]);
    else return CUDA_ERROR_INVALID_VALUE;
  }
  if (!buffer || size < layout.param_bytes) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(out, buffer, layout.param_bytes);
  return CUDA_SUCCESS;
}

// A cooperative grid synchronises all its blocks, so all must be resident at
// once: no more than the occupancy calculator allows on every multiprocessor.
CUresult check_cooperative(CUfunction fn, const Config& c) {
  const DeviceInfo* info = nullptr;
  if (CUresult r = device_info(&info); r != CUDA_SUCCESS) return r;
  int per_sm = 0;
  const int threads = static_cast<int>(c.block[0] * c.block[1] * c.block[2]);
  if (CUresult r = cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, threads, c.shared_mem);
      r != CUDA_SUCCESS)
    return r;
  const uint64_t fits = uint64_t(per_sm) * info->attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  const uint64_t blocks = uint64_t{c.grid[0]} * c.grid[1] * c.grid[2];
  return blocks <= fits ? CUDA_SUCCESS : CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
}

// The launch's cluster shape: the kernel's own if it has one (a launch may
// only repeat it), else the one given. Checked as the driver checks it: the
// device has clusters, each grid dimension is a multiple of the shape, and at
// most 8 blocks (16 where the kernel allows a non-portable size).
CUresult resolve_cluster(const Function& f, Config* c) {
  const unsigned* required = f.required_cluster;
  const int set = (required[0] != 0) + (required[1] != 0) + (required[2] != 0);
  if (set != 0 && set != 3) return CUDA_ERROR_INVALID_CLUSTER_SIZE;  // all 0 or all positive
  if (set == 3) {
    if (c->cluster_given && !std::equal(required, required + 3, c->cluster))
      return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    std::copy_n(required, 3, c->cluster);
  }
  const uint64_t blocks = uint64_t{c->cluster[0]} * c->cluster[1] * c->cluster[2];
  if (blocks == 1) return CUDA_SUCCESS;
  const DeviceInfo* info = nullptr;
  if (CUresult r = device_info(&info); r != CUDA_SUCCESS) return r;
  if (!info->attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  for (int i = 0; i < 3; ++i) {
    if (c->cluster[i] == 0 || c->grid[i] % c->cluster[i] != 0) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  }
  const uint64_t most = f.non_portable_cluster ? fatbin::kMaxClusterBlocks : fatbin::kMaxPortableClusterBlocks;
  return blocks <= most ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CLUSTER_SIZE;
}

CUresult launch(CUfunction fn, const Config& given, void** params, void** extra) {
  Config cfg = given;
  if (CUresult r = need_context(); r != CUDA_SUCCESS) return r;
  if (params && extra) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_config(cfg); r != CUDA_SUCCESS) return r;
  if (cfg.cooperative) {
    if (CUresult r = check_cooperative(fn, cfg); r != CUDA_SUCCESS) return r;
  }
  Function* f = live_function(fn);
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = check_shared_memory(*f, cfg); r != CUDA_SUCCESS) return r;
  if (CUresult r = resolve_cluster(*f, &cfg); r != CUDA_SUCCESS) return r;
  // Most kernels' parameters fit on the stack; CUDA allows 32 KiB.
  uint8_t small[1024];
  std::vector<uint8_t> large;
  uint8_t* packed = small;
  if (f->layout->param_bytes > sizeof small) {
    large.resize(f->layout->param_bytes);
    packed = large.data();
  }
  if (CUresult r = pack(*f->layout, params, extra, packed); r != CUDA_SUCCESS) return r;
  if (CUresult r = map_host_pointers(packed, f->layout->param_bytes, f->layout->name.c_str()); r != CUDA_SUCCESS)
    return r;
  if (capture::active.load(std::memory_order_relaxed) > 0 && capture::capturing(cfg.stream)) {
    if (cfg.cooperative) return refuse("a cooperative launch into a capturing stream");
    graph::Node node;  // a kernel node of the capture
    if (CUresult r = graph::set_kernel_packed(&node, f, cfg.grid, cfg.block, cfg.shared_mem,
                                              std::vector<uint8_t>(packed, packed + f->layout->param_bytes));
        r != CUDA_SUCCESS)
      return r;
    std::copy_n(cfg.cluster, 3, node.cluster);
    return capture::add(cfg.stream, std::move(node));
  }
  proto::LaunchKernelRequest req{};
  req.function = f->host_function;
  req.stream = stream_handle(cfg.stream);
  for (int i = 0; i < 3; ++i) {
    req.grid[i] = cfg.grid[i];
    req.block[i] = cfg.block[i];
  }
  req.shared_mem = cfg.shared_mem;
  req.flags = cfg.cooperative ? proto::kLaunchCooperative : 0;
  if (cfg.cluster[0] * cfg.cluster[1] * cfg.cluster[2] > 1) req.flags |= proto::launch_cluster_flags(cfg.cluster);
  // A kernel may read or write any managed memory: what the CPU wrote goes
  // first, in the kernel's stream, and the CPU's copy is stale after.
  if (managed::any()) {
    if (CUresult r = managed::before_launch(req.stream); r != CUDA_SUCCESS) return r;
  }
  if (f->prints) device_output::expect();
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  return to_cu(c.post(req, std::span<const uint8_t>(packed, f->layout->param_bytes), nullptr));
}

// Function attributes as the host reads them from the image; fetched per call
// (programs ask rarely; the runtime caches them itself).
CUresult host_attributes(Function* f, proto::FuncGetAttributesReply* rep) {
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  return to_cu(c.call(proto::FuncGetAttributesRequest{f->host_function}, {}, rep));
}

CUresult get_attribute(int* value, CUfunction_attribute attr, CUfunction fn) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  Function* f = nullptr;
  {
    Objects& o = Objects::instance();
    std::lock_guard lock(o.mutex());
    f = o.function(fn);
  }
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  proto::FuncGetAttributesReply a{};
  if (CUresult r = host_attributes(f, &a); r != CUDA_SUCCESS) return r;
  switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = a.max_threads_per_block; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = static_cast<int>(a.shared_size_bytes); break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *value = static_cast<int>(a.const_size_bytes); break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = static_cast<int>(a.local_size_bytes); break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = a.num_regs; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = a.ptx_version; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = a.binary_version; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = f->max_dynamic_shared
                   ? f->max_dynamic_shared
                   : std::max(0, 48 * 1024 - static_cast<int>(a.shared_size_bytes));
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = -1; break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: *value = static_cast<int>(f->required_cluster[0]); break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT: *value = static_cast<int>(f->required_cluster[1]); break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *value = static_cast<int>(f->required_cluster[2]); break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *value = f->non_portable_cluster; break;
    default: *value = 0; break;  // cache mode, cluster scheduling: none
  }
  return CUDA_SUCCESS;
}

CUresult set_attribute(CUfunction fn, CUfunction_attribute attr, int value) {
  Objects& o = Objects::instance();
  std::lock_guard lock(o.mutex());
  Function* f = o.function(fn);
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (attr == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    const DeviceInfo* info = nullptr;
    if (CUresult r = device_info(&info); r != CUDA_SUCCESS) return r;
    if (value < 0 || value > info->attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))
      return CUDA_ERROR_INVALID_VALUE;
    f->max_dynamic_shared = value;
  } else if (attr == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED) {
    f->non_portable_cluster = value != 0;
  } else if (attr == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH ||
             attr == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT ||
             attr == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH) {
    // A shape compiled in cannot change; one set here applies to launches
    // that give none (CUDA's rule for these attributes).
    if (f->layout->cluster[0] != 0) return CUDA_ERROR_NOT_PERMITTED;
    if (value < 0 || value > static_cast<int>(fatbin::kMaxClusterBlocks)) return CUDA_ERROR_INVALID_VALUE;
    f->required_cluster[attr - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = static_cast<unsigned>(value);
  }
  // Carveout and scheduling preferences are hints; accepted.
  return CUDA_SUCCESS;
}

}  // namespace

CUresult vgpu::driver::pack_arguments(CUfunction fn, void** params, void** extra, Function** out,
                                      std::vector<uint8_t>* bytes) {
  if (params && extra) return CUDA_ERROR_INVALID_VALUE;
  Function* f = live_function(fn);
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  bytes->assign(f->layout->param_bytes, 0);
  if (CUresult r = pack(*f->layout, params, extra, bytes->data()); r != CUDA_SUCCESS) return r;
  *out = f;
  return CUDA_SUCCESS;
}

extern "C" {

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, CUstream stream, void** params,
                        void** extra) {
  return launch(f, Config{{gx, gy, gz}, {bx, by, bz}, shared, stream}, params, extra);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  if (!config || (config->numAttrs > 0 && !config->attrs)) return CUDA_ERROR_INVALID_VALUE;
  Config cfg{{config->gridDimX, config->gridDimY, config->gridDimZ},
             {config->blockDimX, config->blockDimY, config->blockDimZ},
             config->sharedMemBytes, config->hStream};
  bool cooperative = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    switch (a.id) {
      case CU_LAUNCH_ATTRIBUTE_IGNORE:
      case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:  // stream order is kept anyway
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        break;
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        cfg.cluster[0] = a.value.clusterDim.x;
        cfg.cluster[1] = a.value.clusterDim.y;
        cfg.cluster[2] = a.value.clusterDim.z;
        cfg.cluster_given = true;
        break;
      case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        cooperative = a.value.cooperative != 0;
        break;
      default: {
        char what[80];
        std::snprintf(what, sizeof what, "cuLaunchKernelEx attribute %d", static_cast<int>(a.id));
        return refuse(what);
      }
    }
  }
  cfg.cooperative = cooperative;
  return launch(f, cfg, params, extra);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shared, CUstream stream,
                                   void** params) {
  return launch(f, Config{{gx, gy, gz}, {bx, by, bz}, shared, stream, true}, params, nullptr);
}

CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attr, CUfunction fn) {
  return get_attribute(value, attr, fn);
}

CUresult cuKernelGetAttribute(int* value, CUfunction_attribute attr, CUkernel k, CUdevice) {
  return get_attribute(value, attr, reinterpret_cast<CUfunction>(k));
}

CUresult cuFuncSetAttribute(CUfunction fn, CUfunction_attribute attr, int value) {
  return set_attribute(fn, attr, value);
}

CUresult cuKernelSetAttribute(CUfunction_attribute attr, int value, CUkernel k, CUdevice) {
  return set_attribute(reinterpret_cast<CUfunction>(k), attr, value);
}

// Cache and bank preferences are hints CUDA may ignore; so does vgpu.
CUresult cuFuncSetCacheConfig(CUfunction, CUfunc_cache) { return CUDA_SUCCESS; }
CUresult cuKernelSetCacheConfig(CUkernel, CUfunc_cache, CUdevice) { return CUDA_SUCCESS; }
CUresult cuFuncSetSharedMemConfig(CUfunction, CUsharedconfig) { return CUDA_SUCCESS; }

}  // extern "C"
