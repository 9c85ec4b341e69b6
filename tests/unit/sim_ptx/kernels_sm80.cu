// Test kernels that need PTX for compute_80 or later (nvcc -ptx -arch=compute_80): what code
// built for an Ampere or Hopper GPU alone (-arch=sm_80 ... sm_90) carries, and libraries such
// as cuSOLVER ship. Run by ptx_class_features_test.cpp.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
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

// cuda::barrier in shared memory: the block's copy completes on it (cp.async.mbarrier.arrive),
// every thread arrives and waits (mbarrier.arrive, test_wait), then two more phases in which
// each thread writes its slot and reads its neighbour's, with no __syncthreads between.
#pragma nv_diag_suppress static_var_with_dynamic_init
extern "C" __global__ void barrier_rounds(const int* in, int* out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  __shared__ int s[256];
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  cuda::memcpy_async(block, s, in + blockIdx.x * 256, sizeof(int) * 256, bar);
  bar.arrive_and_wait();
  int v = s[255 - threadIdx.x];
  for (int round = 0; round < 2; ++round) {
    bar.arrive_and_wait();  // everyone has read s
    s[threadIdx.x] = v + 1;
    bar.arrive_and_wait();  // everyone has written s
    v = s[(threadIdx.x + 1) % blockDim.x];
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// The forms the headers leave to hand-written code: pending_count of an arrival's state, a wait
// on a phase's parity (test_wait and try_wait), and arrive_drop: odd threads leave the barrier,
// and the phase after completes with the even ones alone.
__device__ void wait_parity(unsigned bar, unsigned parity, bool try_form) {
  unsigned done = 0;
  while (!done) {
    if (try_form) {
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, 1000; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } else {
      asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    }
  }
}

extern "C" __global__ void barrier_forms(unsigned* pending, int* passed) {
  __shared__ unsigned long long object;
  const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(&object));
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(bar), "r"(blockDim.x) : "memory");
  __syncthreads();
  unsigned long long state;
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(bar) : "memory");
  unsigned count;
  asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(count) : "l"(state));
  pending[threadIdx.x] = count;
  wait_parity(bar, 0, false);  // phase 0: every thread arrived
  if (threadIdx.x & 1) {
    asm volatile("mbarrier.arrive_drop.shared.b64 _, [%0];" ::"r"(bar) : "memory");
    return;
  }
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0], 1;" ::"r"(bar) : "memory");
  wait_parity(bar, 1, true);   // phase 1: all arrived, the odd ones for the last time
  asm volatile("mbarrier.arrive.shared.b64 _, [%0];" ::"r"(bar) : "memory");
  wait_parity(bar, 0, false);  // phase 2: the even ones alone complete it
  passed[threadIdx.x] = 1;
}

// Bulk copies (Hopper's, written here by hand: nvcc emits them for sm_90) of a block's two
// tiles into shared memory, each completing on a barrier's transaction count: the first with
// its bytes expected before the copy (arrive.expect_tx), the second after (expect_tx), as
// cuda::memcpy_async does. Every thread then reads the tiles reversed.
extern "C" __global__ void bulk_copies(const int* in, int* out) {
  __shared__ alignas(16) int tile[2][256];
  __shared__ unsigned long long object;
  const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(&object));
  const unsigned bytes = blockDim.x * sizeof(int);
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(bar), "r"(blockDim.x) : "memory");
  __syncthreads();
  unsigned long long state;
  if (threadIdx.x == 0) {
    const unsigned t0 = static_cast<unsigned>(__cvta_generic_to_shared(&tile[0][0]));
    const unsigned t1 = static_cast<unsigned>(__cvta_generic_to_shared(&tile[1][0]));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(t0), "l"(in), "r"(bytes), "r"(bar) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(t1), "l"(in + blockDim.x), "r"(bytes), "r"(bar) : "memory");
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
  } else {
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(bar) : "memory");
  }
  unsigned done = 0;
  while (!done) {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(bar) : "memory");
  }
  out[threadIdx.x] = tile[0][blockDim.x - 1 - threadIdx.x];
  out[blockDim.x + threadIdx.x] = tile[1][blockDim.x - 1 - threadIdx.x];
}

// A phase whose arrivals are all in waits for its bytes: open after arrive.expect_tx, complete
// after complete_tx brings the count to zero.
extern "C" __global__ void bytes_pending(int* out) {
  __shared__ unsigned long long object;
  const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(&object));
  unsigned done;
  asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(bar) : "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], 16;" ::"r"(bar) : "memory");
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
               : "=r"(done) : "r"(bar) : "memory");
  out[0] = done;
  asm volatile("mbarrier.complete_tx.shared.b64 [%0], 16;" ::"r"(bar) : "memory");
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
               : "=r"(done) : "r"(bar) : "memory");
  out[1] = done;
}
