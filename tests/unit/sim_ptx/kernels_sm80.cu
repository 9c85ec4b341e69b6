// Test kernels that need PTX for compute_80 or later (nvcc -ptx -arch=compute_80): what code
// built for an Ampere or Hopper GPU alone (-arch=sm_80 ... sm_90) carries, and libraries such
// as cuSOLVER ship. Run by ptx_class_features_test.cpp.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda_pipeline.h>

namespace cg = cooperative_groups;

// Each thread stages one float through shared memory with cp.async; past n the copy reads
// nothing and zero-fills (src-size 0), so those slots read back 0.
extern "C" __global__ void staged_reverse(const float* in, float* out, int n) {
  __shared__ float s[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  __pipeline_memcpy_async(&s[threadIdx.x], &in[i < n ? i : 0], sizeof(float), i < n ? 0 : sizeof(float));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  out[i] = s[blockDim.x - 1 - threadIdx.x] * 2;
}

// cooperative_groups::memcpy_async of a whole tile by the block, then a wait.
extern "C" __global__ void group_copy(const int* in, int* out) {
  __shared__ int s[512];
  auto block = cg::this_thread_block();
  cg::memcpy_async(block, s, in + blockIdx.x * 512, sizeof(int) * 512);
  cg::wait(block);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[511 - threadIdx.x];
}

// The forms nvcc's headers do not emit: 16-byte copies, an ignore-src predicate, a cache hint.
extern "C" __global__ void async_forms(const int4* in, int4* out, int skip) {
  __shared__ int4 s[2];
  const unsigned dst0 = static_cast<unsigned>(__cvta_generic_to_shared(&s[0]));
  const unsigned dst1 = static_cast<unsigned>(__cvta_generic_to_shared(&s[1]));
  asm volatile(
      "{ .reg .pred p; .reg .b64 policy;\n"
      "  setp.ne.s32 p, %3, 0;\n"
      "  createpolicy.fractional.L2::evict_last.b64 policy, 1.0;\n"
      "  cp.async.cg.shared.global.L2::cache_hint [%0], [%2], 16, policy;\n"
      "  cp.async.ca.shared.global [%1], [%2], 16, p;\n"
      "  cp.async.wait_all; }\n" ::"r"(dst0), "r"(dst1), "l"(in), "r"(skip));
  out[0] = s[0];
  out[1] = s[1];
}
