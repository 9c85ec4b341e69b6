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

// Tensor cores through nvcuda::wmma (ptx_wmma.cpp). Each kernel is one warp's tile.
#include <cuda_bf16.h>
#include <mma.h>
namespace wmma = nvcuda::wmma;

// d = alpha * a * b + beta * c, 16x16x16: a row-major, b column-major (f16), an f32 accumulator;
// c read row-major, d written column-major, every stride 16. The scaling is element-wise code
// over two accumulator fragments, as NVIDIA's samples write it.
extern "C" __global__ void wmma_f16_scaled(const __half* a, const __half* b, const float* c, float* d, float alpha,
                                           float beta) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, fc;
  wmma::fill_fragment(acc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::load_matrix_sync(fc, c, 16, wmma::mem_row_major);
  for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = alpha * acc.x[i] + beta * fc.x[i];
  wmma::store_matrix_sync(d, acc, 16, wmma::mem_col_major);
}

// 32x8x16 with an f16 accumulator, through shared memory with a stride of 24 halves (a tile
// of a wider matrix); the second warp of the block does the same into its own half of d.
extern "C" __global__ void wmma_f16_shared(const __half* a, const __half* b, __half* d) {
  __shared__ __half sa[32 * 24], sb[16 * 24];
  const int warp = threadIdx.x / 32;
  for (int i = threadIdx.x; i < 32 * 16; i += blockDim.x) sa[(i / 16) * 24 + i % 16] = a[i];
  for (int i = threadIdx.x; i < 16 * 8; i += blockDim.x) sb[(i / 8) * 24 + i % 8] = b[i];
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 32, 8, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 32, 8, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 32, 8, 16, __half> acc;
  wmma::fill_fragment(acc, __float2half(warp + 1.0f));
  wmma::load_matrix_sync(fa, sa, 24);
  wmma::load_matrix_sync(fb, sb, 24);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d + warp * 32 * 8, acc, 8, wmma::mem_row_major);
}

// 8x32x16 in bf16 with an f32 accumulator loaded from c.
extern "C" __global__ void wmma_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, const float* c, float* d) {
  wmma::fragment<wmma::matrix_a, 8, 32, 16, __nv_bfloat16, wmma::col_major> fa;
  wmma::fragment<wmma::matrix_b, 8, 32, 16, __nv_bfloat16, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 8, 32, 16, float> acc;
  wmma::load_matrix_sync(fa, a, 8);
  wmma::load_matrix_sync(fb, b, 32);
  wmma::load_matrix_sync(acc, c, 32, wmma::mem_row_major);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d, acc, 32, wmma::mem_row_major);
}

// 16x16x8 in tf32: the inputs rounded to tf32 first (__float_to_tf32), as NVIDIA's sample does.
extern "C" __global__ void wmma_tf32(const float* a, const float* b, float* d) {
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::load_matrix_sync(fa, a, 8);
  wmma::load_matrix_sync(fb, b, 8);
  for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
  for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
  wmma::fill_fragment(acc, 0.0f);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
}

// 8x8x4 in double.
extern "C" __global__ void wmma_f64(const double* a, const double* b, double* d) {
  wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 8, 8, 4, double> acc;
  wmma::fill_fragment(acc, 0.5);
  wmma::load_matrix_sync(fa, a, 4);
  wmma::load_matrix_sync(fb, b, 8);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d, acc, 8, wmma::mem_row_major);
}

// 16x16x16 in signed 8-bit integers with a saturating int accumulator.
extern "C" __global__ void wmma_s8(const signed char* a, const signed char* b, const int* c, int* d) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> acc;
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::load_matrix_sync(acc, c, 16, wmma::mem_row_major);
  wmma::mma_sync(acc, fa, fb, acc, true);
  wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
}

// A 4-bit integer product: not run (refused by name).
extern "C" __global__ void wmma_s4(const void* a, const void* b, int* d) {
  using namespace wmma::experimental;
  wmma::fragment<wmma::matrix_a, 8, 8, 32, precision::s4, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 8, 8, 32, precision::s4, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 8, 8, 32, int> acc;
  wmma::fill_fragment(acc, 0);
  wmma::load_matrix_sync(fa, a, 32);
  wmma::load_matrix_sync(fb, b, 32);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d, acc, 8, wmma::mem_row_major);
}

// bfloat16 arithmetic as cuda_bf16.h compiles it for compute_80 (fma.rn.bf16 for +, -, *).
extern "C" __global__ void bf16_math(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out,
                                     __nv_bfloat162* pairs, float* f) {
  const int i = threadIdx.x;
  const __nv_bfloat16 x = a[i], y = b[i];
  out[i * 6 + 0] = x + y;
  out[i * 6 + 1] = x * y;
  out[i * 6 + 2] = x - y;
  out[i * 6 + 3] = __hfma(x, y, x);
  out[i * 6 + 4] = __hmax(x, y);
  out[i * 6 + 5] = -x;
  f[i] = __bfloat162float(x) + (x < y ? 100.f : 0.f);
  const __nv_bfloat162 p = __floats2bfloat162_rn(__bfloat162float(x), __bfloat162float(y) + 0.3f);
  pairs[i] = __hfma2(p, p, p);
}
