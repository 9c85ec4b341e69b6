// Kernel launches: pack the arguments as the kernel's metadata lays them out
// and queue the launch without waiting; failures surface at the next
// synchronising call, as with CUDA.
#include <cstring>
#include <vector>

#include "api.h"
#include "log.h"
#include "registry.h"

using namespace vgpu;
using namespace vgpu::intercept;

namespace {

// What CUDA itself rejects before a launch reaches the device.
Status check_config(dim3 grid, dim3 block) {
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0 || threads > 1024 ||
      block.z > 64 || grid.y > 65535 || grid.z > 65535)
    return Status::kInvalidConfiguration;
  return Status::kSuccess;
}

Status launch(KernelRec* k, dim3 grid, dim3 block, void** args, size_t shared_mem,
              cudaStream_t stream) {
  if (!k) return Status::kInvalidDeviceFunction;
  if (Status s = check_config(grid, block); !ok(s)) return s;
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  if (Status s = Registry::instance().resolve(c, *k); !ok(s)) return s;
  std::vector<uint8_t> params(k->layout->param_bytes);
  if (!k->layout->params.empty() && !args) return Status::kInvalidValue;
  for (size_t i = 0; i < k->layout->params.size(); ++i) {
    const fatbin::Param& p = k->layout->params[i];
    std::memcpy(params.data() + p.offset, args[i], p.size);
  }
  proto::LaunchKernelRequest req{};
  req.function = k->host_function;
  req.stream = stream_handle(stream);
  req.grid[0] = grid.x;
  req.grid[1] = grid.y;
  req.grid[2] = grid.z;
  req.block[0] = block.x;
  req.block[1] = block.y;
  req.block[2] = block.z;
  req.shared_mem = static_cast<uint32_t>(shared_mem);
  return c.post(req, params, nullptr);
}

}  // namespace

extern "C" {

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                               size_t sharedMem, cudaStream_t stream) {
  return result(launch(Registry::instance().kernel_by_handle(kernel), gridDim, blockDim, args,
                       sharedMem, stream));
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                    size_t sharedMem, cudaStream_t stream) {
  return __cudaLaunchKernel(kernel, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                             size_t sharedMem, cudaStream_t stream) {
  return result(launch(Registry::instance().kernel_by_host_fun(func), gridDim, blockDim, args,
                       sharedMem, stream));
}

cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                  size_t sharedMem, cudaStream_t stream) {
  return cudaLaunchKernel(func, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (!attr) return result(Status::kInvalidValue);
  KernelRec* k = Registry::instance().kernel_by_host_fun(func);
  if (!k) return result(Status::kInvalidDeviceFunction);
  Connection& c = Connection::instance();
  Connection::Lock lock(c);
  if (Status s = Registry::instance().resolve(c, *k); !ok(s)) return result(s);
  proto::FuncGetAttributesReply rep{};
  if (Status s = c.call(proto::FuncGetAttributesRequest{k->host_function}, {}, &rep); !ok(s))
    return result(s);
  std::memset(attr, 0, sizeof *attr);
  attr->sharedSizeBytes = rep.shared_size_bytes;
  attr->constSizeBytes = rep.const_size_bytes;
  attr->localSizeBytes = rep.local_size_bytes;
  attr->maxThreadsPerBlock = rep.max_threads_per_block;
  attr->numRegs = rep.num_regs;
  attr->ptxVersion = rep.ptx_version;
  attr->binaryVersion = rep.binary_version;
  return cudaSuccess;
}

}  // extern "C"
