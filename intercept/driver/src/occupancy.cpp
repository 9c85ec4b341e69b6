// Occupancy calculators, computed in the guest from the function's
// attributes and the device's limits, as NVIDIA's own calculator does:
// resident blocks per multiprocessor are bounded by threads (in warps),
// registers, shared memory and the block count limit.
#include <algorithm>

#include "driver_state.h"

using namespace vgpu;
using namespace vgpu::driver;

namespace {

struct Limits {
  int warp, threads_per_sm, blocks_per_sm, regs_per_sm, smem_per_sm, smem_per_block_optin;
  int reserved_smem;
};

CUresult limits(Limits* l) {
  const DeviceInfo* info = nullptr;
  if (CUresult r = device_info(&info); r != CUDA_SUCCESS) return r;
  l->warp = std::max(1, info->attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  l->threads_per_sm = info->attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  l->blocks_per_sm = info->attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  l->regs_per_sm = info->attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  l->smem_per_sm = info->attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  l->smem_per_block_optin = info->attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  l->reserved_smem = info->attribute(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  return CUDA_SUCCESS;
}

struct FuncUse {
  int regs, static_smem, max_threads;
};

CUresult use_of(CUfunction fn, FuncUse* u) {
  if (CUresult r = cuFuncGetAttribute(&u->regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn); r != CUDA_SUCCESS) return r;
  if (CUresult r = cuFuncGetAttribute(&u->static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn); r != CUDA_SUCCESS) return r;
  return cuFuncGetAttribute(&u->max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
}

int blocks_per_sm(const Limits& l, const FuncUse& u, int block, size_t dynamic_smem) {
  if (block <= 0 || block > u.max_threads) return 0;
  const int warps = (block + l.warp - 1) / l.warp;
  int n = std::min(l.blocks_per_sm, l.threads_per_sm / (warps * l.warp));
  if (u.regs > 0) {
    const int regs_per_warp = ((u.regs * l.warp + 255) / 256) * 256;  // allocated per warp, in 256s
    n = std::min(n, l.regs_per_sm / std::max(1, regs_per_warp * warps));
  }
  const size_t smem = static_cast<size_t>(u.static_smem) + dynamic_smem + l.reserved_smem;
  if (smem > static_cast<size_t>(l.smem_per_block_optin) + l.reserved_smem) return 0;
  if (smem > 0) n = std::min<int>(n, static_cast<int>(static_cast<size_t>(l.smem_per_sm) / smem));
  return std::max(n, 0);
}

}  // namespace

extern "C" {

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, CUfunction fn, int block,
                                                              size_t dynamic_smem, unsigned) {
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  Limits l;
  FuncUse u;
  if (CUresult r = limits(&l); r != CUDA_SUCCESS) return r;
  if (CUresult r = use_of(fn, &u); r != CUDA_SUCCESS) return r;
  *n = blocks_per_sm(l, u, block, dynamic_smem);
  return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* n, CUfunction fn, int block,
                                                     size_t dynamic_smem) {
  return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, fn, block, dynamic_smem, 0);
}

CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int* min_grid, int* block_size, CUfunction fn,
                                                   CUoccupancyB2DSize smem_for_block,
                                                   size_t dynamic_smem, int limit, unsigned) {
  if (!min_grid || !block_size) return CUDA_ERROR_INVALID_VALUE;
  Limits l;
  FuncUse u;
  if (CUresult r = limits(&l); r != CUDA_SUCCESS) return r;
  if (CUresult r = use_of(fn, &u); r != CUDA_SUCCESS) return r;
  const DeviceInfo* info = nullptr;
  if (CUresult r = device_info(&info); r != CUDA_SUCCESS) return r;
  int max_block = u.max_threads;
  if (limit > 0) max_block = std::min(max_block, limit);
  int best_block = 0, best_threads = 0;
  for (int b = max_block - max_block % l.warp; b > 0; b -= l.warp) {
    const size_t smem = smem_for_block ? smem_for_block(b) : dynamic_smem;
    const int threads = blocks_per_sm(l, u, b, smem) * b;
    if (threads > best_threads) {
      best_threads = threads;
      best_block = b;
    }
  }
  *block_size = best_block;
  *min_grid = best_block ? (best_threads / best_block) * info->attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) : 0;
  return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block_size, CUfunction fn,
                                          CUoccupancyB2DSize smem_for_block, size_t dynamic_smem,
                                          int limit) {
  return cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid, block_size, fn, smem_for_block,
                                                   dynamic_smem, limit, 0);
}

CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t* smem, CUfunction fn, int blocks, int block) {
  if (!smem || blocks <= 0 || block <= 0) return CUDA_ERROR_INVALID_VALUE;
  Limits l;
  FuncUse u;
  if (CUresult r = limits(&l); r != CUDA_SUCCESS) return r;
  if (CUresult r = use_of(fn, &u); r != CUDA_SUCCESS) return r;
  const int per_block = l.smem_per_sm / blocks - l.reserved_smem - u.static_smem;
  *smem = static_cast<size_t>(std::clamp(per_block, 0, l.smem_per_block_optin - u.static_smem));
  return CUDA_SUCCESS;
}

}  // extern "C"

// Clusters. The shape is the launch's attribute, else the kernel's own. A
// GPU places a cluster's blocks on the multiprocessors of one GPC; the guest
// does not know the GPCs, so it counts clusters over the whole device: for a
// small cluster this is what the driver says, for large ones it may be more.
namespace {

// The cluster shape of `config` for `fn`, in blocks (1: none), and whether
// the kernel may have more than the portable 8.
CUresult cluster_of(CUfunction fn, const CUlaunchConfig* config, uint64_t* blocks, bool* non_portable) {
  unsigned shape[3] = {1, 1, 1};
  {
    Objects& o = Objects::instance();
    std::lock_guard lock(o.mutex());
    const Function* f = o.function(fn);
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    if (f->required_cluster[0] != 0) std::copy_n(f->required_cluster, 3, shape);
    *non_portable = f->non_portable_cluster;
  }
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    if (a.id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) continue;
    shape[0] = a.value.clusterDim.x;
    shape[1] = a.value.clusterDim.y;
    shape[2] = a.value.clusterDim.z;
  }
  *blocks = uint64_t{shape[0]} * shape[1] * shape[2];
  return *blocks == 0 ? CUDA_ERROR_INVALID_CLUSTER_SIZE : CUDA_SUCCESS;
}

// Blocks of a launch of `fn` shaped as `config` the whole device holds at once.
CUresult resident_blocks(CUfunction fn, const CUlaunchConfig* config, const DeviceInfo& info,
                         uint64_t* blocks) {
  const int block = static_cast<int>(config->blockDimX * config->blockDimY * config->blockDimZ);
  int per_sm = 0;
  if (CUresult r = cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, block,
                                                                config->sharedMemBytes);
      r != CUDA_SUCCESS)
    return r;
  *blocks = uint64_t(per_sm) * info.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuOccupancyMaxActiveClusters(int* clusters, CUfunction fn, const CUlaunchConfig* config) {
  if (!clusters || !config || (config->numAttrs > 0 && !config->attrs)) return CUDA_ERROR_INVALID_VALUE;
  uint64_t size = 1;
  bool non_portable = false;
  if (CUresult r = cluster_of(fn, config, &size, &non_portable); r != CUDA_SUCCESS) return r;
  const DeviceInfo* info = nullptr;
  if (CUresult r = device_info(&info); r != CUDA_SUCCESS) return r;
  const uint64_t most = non_portable ? fatbin::kMaxClusterBlocks : fatbin::kMaxPortableClusterBlocks;
  if (size > 1 && (!info->attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH) || size > most)) {
    *clusters = 0;
    return CUDA_SUCCESS;
  }
  uint64_t blocks = 0;
  if (CUresult r = resident_blocks(fn, config, *info, &blocks); r != CUDA_SUCCESS) return r;
  *clusters = static_cast<int>(blocks / size);
  return CUDA_SUCCESS;
}

// The largest cluster a launch of `fn` may ask for on this device: 8 blocks,
// 16 where the kernel allows a non-portable size, 1 on a device without
// clusters; fewer if that many blocks cannot be resident on one
// multiprocessor group (approximated as the whole device).
CUresult cuOccupancyMaxPotentialClusterSize(int* size, CUfunction fn, const CUlaunchConfig* config) {
  if (!size || !config || (config->numAttrs > 0 && !config->attrs)) return CUDA_ERROR_INVALID_VALUE;
  uint64_t shape = 1;
  bool non_portable = false;
  if (CUresult r = cluster_of(fn, config, &shape, &non_portable); r != CUDA_SUCCESS) return r;
  const DeviceInfo* info = nullptr;
  if (CUresult r = device_info(&info); r != CUDA_SUCCESS) return r;
  if (!info->attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)) {
    *size = 1;
    return CUDA_SUCCESS;
  }
  uint64_t resident = 0;
  if (CUresult r = resident_blocks(fn, config, *info, &resident); r != CUDA_SUCCESS) return r;
  const uint64_t most = non_portable ? fatbin::kMaxClusterBlocks : fatbin::kMaxPortableClusterBlocks;
  *size = static_cast<int>(std::min(most, resident));
  return CUDA_SUCCESS;
}

}  // extern "C"
