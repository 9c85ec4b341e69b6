// Test kernels for the PTX interpreter: compiled to PTX by nvcc (-ptx -arch=compute_75) and run on
// host memory by ptx_interpreter_test.cpp. extern "C" keeps the entry names unmangled.
#include <cassert>
#include <cstdio>

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void saxpy(int n, float alpha, const float* x, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = alpha * x[i] + y[i];
}

#define TILE 8
extern "C" __global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float ta[TILE][TILE];
  __shared__ float tb[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float sum = 0;
  for (int t = 0; t < (n + TILE - 1) / TILE; ++t) {
    int ac = t * TILE + threadIdx.x, br = t * TILE + threadIdx.y;
    ta[threadIdx.y][threadIdx.x] = (row < n && ac < n) ? a[row * n + ac] : 0.0f;
    tb[threadIdx.y][threadIdx.x] = (br < n && col < n) ? b[br * n + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) sum += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < n) c[row * n + col] = sum;
}

extern "C" __global__ void reduce_sum(const int* in, int* out, int n) {
  __shared__ int s[256];
  unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + threadIdx.x;
  s[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

extern "C" __global__ void warp_reduce(const float* in, float* out) {
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v;
}

extern "C" __global__ void warp_vote(const int* in, unsigned* ballots, int* alls) {
  int v = in[threadIdx.x];
  unsigned b = __ballot_sync(0xffffffffu, v > 0);
  int all = __all_sync(0xffffffffu, v > 0);
  int bf = __shfl_xor_sync(0xffffffffu, v, 1);
  int ix = __shfl_sync(0xffffffffu, v, 3);
  int up = __shfl_up_sync(0xffffffffu, v, 2);
  if (threadIdx.x % 32 == 0) { ballots[threadIdx.x / 32] = b; alls[threadIdx.x / 32] = all; }
  alls[2 + threadIdx.x * 3] = bf;
  alls[3 + threadIdx.x * 3] = ix;
  alls[4 + threadIdx.x * 3] = up;
}

extern "C" __global__ void histogram(const unsigned char* data, int n, int* bins) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[data[i] % 16], 1);
}

extern "C" __global__ void atomic_float_sum(const float* in, int n, float* sum) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(sum, in[i]);
}

__device__ float atomic_max_float(float* addr, float v) {
  int* ai = (int*)addr;
  int old = *ai, assumed;
  do {
    assumed = old;
    old = atomicCAS(ai, assumed, __float_as_int(fmaxf(v, __int_as_float(assumed))));
  } while (assumed != old);
  return __int_as_float(old);
}

extern "C" __global__ void atomic_cas_max(const float* in, int n, float* mx, unsigned* misc) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomic_max_float(mx, in[i]);
    atomicMax(&misc[0], (unsigned)i);
    atomicMin(&misc[1], (unsigned)i);
    atomicOr(&misc[2], 1u << (i % 32));
    atomicExch(&misc[3], 7u);
    atomicInc(&misc[4], 1000u);
  }
}

extern "C" __global__ void local_array(const int* idx, int* out) {
  int a[16];
  for (int k = 0; k < 16; ++k) a[k] = k * k + threadIdx.x;
  out[threadIdx.x] = a[idx[threadIdx.x] & 15];
}

__device__ __noinline__ int collatz_steps(unsigned x, int limit) {
  int s = 0;
  while (x != 1 && s < limit) { x = (x & 1) ? 3 * x + 1 : x / 2; ++s; }
  return s;
}

extern "C" __global__ void call_func(int* out) {
  out[threadIdx.x] = collatz_steps(threadIdx.x + 1, 1000);
}

extern "C" __global__ void int_ops(const int* a, const int* b, int* out) {
  int i = threadIdx.x;
  int x = a[i], y = b[i];
  unsigned ux = x, uy = y;
  out[i * 10 + 0] = x / y;
  out[i * 10 + 1] = x % y;
  out[i * 10 + 2] = ux / uy;
  out[i * 10 + 3] = ux % uy;
  out[i * 10 + 4] = (x << (y & 7)) ^ (ux >> 3);
  out[i * 10 + 5] = __popc(ux) + __clz(ux);
  out[i * 10 + 6] = __brev(ux);
  out[i * 10 + 7] = (x >> 2) | (x & y);
  out[i * 10 + 8] = __mulhi(x, y);
  out[i * 10 + 9] = min(x, y) * max(x, y) + abs(x);
}

extern "C" __global__ void double_math(const double* in, double* out) {
  int i = threadIdx.x;
  double x = in[i];
  out[i * 4 + 0] = sqrt(x);
  out[i * 4 + 1] = exp(x);
  out[i * 4 + 2] = sin(x);
  out[i * 4 + 3] = x * x / 3.0 + 1.5;
}

extern "C" __global__ void conversions(const float* f, const double* d, int* oi, float* of, unsigned char* ob) {
  int i = threadIdx.x;
  oi[i * 3 + 0] = (int)f[i];
  oi[i * 3 + 1] = __float2int_rn(f[i]);
  oi[i * 3 + 2] = (int)d[i];
  of[i * 3 + 0] = (float)d[i];
  of[i * 3 + 1] = (float)oi[i * 3];
  of[i * 3 + 2] = (float)(unsigned)(i * 1000);
  ob[i] = (unsigned char)(f[i] * 10.0f);
}

extern "C" __global__ void grid2d(int* out, int width) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  out[y * width + x] = y * 1000 + x;
}

extern "C" __global__ void dynamic_shared_reverse(const int* in, int* out, int n) {
  extern __shared__ int buf[];
  int t = threadIdx.x;
  buf[t] = in[t];
  __syncthreads();
  out[t] = buf[n - 1 - t];
}

__device__ int g_counter;
__constant__ float c_coeffs[4];

extern "C" __global__ void globals_and_constants(const float* x, float* y) {
  int i = threadIdx.x;
  float v = x[i];
  y[i] = c_coeffs[0] + v * (c_coeffs[1] + v * (c_coeffs[2] + v * c_coeffs[3]));
  atomicAdd(&g_counter, 1);
}

extern "C" __global__ void print_kernel(int base) {
  printf("thread %d value %f name %s\n", threadIdx.x + base, 1.5f * threadIdx.x, "vgpu");
}

extern "C" __global__ void assert_kernel(const int* v) {
  assert(v[threadIdx.x] < 3);
}

extern "C" __global__ void nanosleep_kernel(int* out) {
  __nanosleep(100);
  out[0] = 1;
}

#include <cuda_fp16.h>

// Takes a generic pointer: called with shared and local addresses, so cvta must give real ones.
__device__ __noinline__ void bump(int* p, int v) { *p += v; }

extern "C" __global__ void misc_ops(const unsigned* in, unsigned long long* out) {
  __shared__ int counter;
  __shared__ int cells[64];
  int local_cell[2] = {0, 0};
  unsigned t = threadIdx.x, x = in[t];
  if (t == 0) counter = 0;
  cells[t] = 0;
  __syncthreads();
  atomicAdd(&counter, (int)t);
  bump(&cells[t], (int)x);
  bump(&local_cell[t & 1], 7);
  unsigned bf;
  asm("bfe.u32 %0, %1, 4, 8;" : "=r"(bf) : "r"(x));
  unsigned bi;
  asm("bfi.b32 %0, %1, %2, 8, 4;" : "=r"(bi) : "r"(t), "r"(x));
  unsigned long long* o = out + t * 12;
  o[0] = __byte_perm(x, t, 0x5140);
  o[1] = __ffs(x);
  o[2] = bf;
  o[3] = bi;
  o[4] = __half2float(__float2half(x * 0.001f));
  o[5] = __any_sync(0xffffffffu, x == 12345u);
  o[6] = __funnelshift_l(x, t, 5);
  o[7] = __umul64hi(0x123456789abcdefull * x, 0xfedcba987654321ull);
  o[8] = __brevll((unsigned long long)x << 7) ^ __popcll(x * 0x100000001ull);
  o[9] = local_cell[0] + local_cell[1] * 100;
  __syncthreads();
  o[10] = cells[t];
  o[11] = counter;
}

extern "C" __global__ void early_exit_barrier(int* out) {
  if (threadIdx.x < 16) return;
  __syncthreads();
  out[threadIdx.x] = threadIdx.x * 2;
}

extern "C" __global__ void print_formats(long long big, double d) {
  printf("[%5d|%-4x|%c|%08.3f|%e|%g|%lld|%llx|%u|%s|%%]\n", -42, 255u, 'Z', d, d, d, big, big, 4000000000u, "ok");
}

extern "C" __global__ void lop3_kernel(const unsigned* in, unsigned* out) {
  unsigned a = in[0], b = in[1], c = in[2], r;
  asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(r) : "r"(a), "r"(b), "r"(c));  // a ^ b ^ c
  out[0] = r;
  asm("lop3.b32 %0, %1, %2, %3, 0xE8;" : "=r"(r) : "r"(a), "r"(b), "r"(c));  // majority
  out[1] = r;
}

extern "C" __global__ void envreg_kernel(unsigned* out) {
  unsigned v;
  asm volatile("mov.u32 %0, %%envreg0;" : "=r"(v));
  out[0] = v;
}

// match.any and match.all (sm_70), and redux (sm_80, written as PTX so that compute_75 builds it):
// out[0..n) match.any, out[n..2n) match.all, out[2n..3n) its predicate, out[3n..) redux add,
// min (signed), max, and, or, xor.
extern "C" __global__ void match_kernel(const int* in, unsigned* out) {
  const unsigned i = threadIdx.x, n = blockDim.x;
  out[i] = __match_any_sync(0xffffffffu, in[i]);
  int pred = 0;
  out[n + i] = __match_all_sync(0xffffffffu, in[i] & 1, &pred);
  out[2 * n + i] = pred;
  unsigned r[6];
  asm volatile("redux.sync.add.u32 %0, %1, 0xffffffff;" : "=r"(r[0]) : "r"(in[i]));
  asm volatile("redux.sync.min.s32 %0, %1, 0xffffffff;" : "=r"(r[1]) : "r"(in[i] - 5));
  asm volatile("redux.sync.max.u32 %0, %1, 0xffffffff;" : "=r"(r[2]) : "r"(in[i]));
  asm volatile("redux.sync.and.b32 %0, %1, 0xffffffff;" : "=r"(r[3]) : "r"(in[i] | 0x100));
  asm volatile("redux.sync.or.b32 %0, %1, 0xffffffff;" : "=r"(r[4]) : "r"(in[i]));
  asm volatile("redux.sync.xor.b32 %0, %1, 0xffffffff;" : "=r"(r[5]) : "r"(in[i]));
  for (int k = 0; k < 6; ++k) out[(3 + k) * n + i] = r[k];
}


__device__ const char* g_names[] = {"alpha", "beta"};
__device__ int g_table[3] = {10, 20, 30};

extern "C" __global__ void initialized_globals(int* out) {
  printf("%s=%d\n", g_names[threadIdx.x & 1], g_table[threadIdx.x % 3]);
  out[threadIdx.x] = g_table[threadIdx.x % 3] + g_names[threadIdx.x & 1][0];
}

extern "C" __global__ void syncthreads_count(const int* in, int* out) {
  int v = in[threadIdx.x];
  int count = __syncthreads_count(v > 0);
  int all = __syncthreads_and(v > -5);
  int any = __syncthreads_or(v > 100);
  if (threadIdx.x == 0) { out[0] = count; out[1] = all; out[2] = any; }
}

// Texture and surface objects: every tex geometry and a tex1Dfetch; the test's texture unit
// answers with values that encode what it was asked.
extern "C" __global__ void texture_reads(cudaTextureObject_t t, cudaTextureObject_t lin, float* f, int* i) {
  f[0] = tex1D<float>(t, 9.5f);
  f[1] = tex2D<float>(t, 1.5f, 2.5f);
  f[2] = tex3D<float>(t, 1.0f, 2.0f, 3.0f);
  f[3] = texCubemap<float>(t, 4.0f, 5.0f, 6.0f);
  float4 v = tex2DLayered<float4>(t, 0.5f, 0.25f, 3);
  f[4] = v.x; f[5] = v.y; f[6] = v.z; f[7] = v.w;
  f[8] = tex1DLayered<float>(t, 7.0f, 2);
  float4 l = tex2DLod<float4>(t, 1.0f, 2.0f, 1.5f);
  f[9] = l.x; f[10] = l.z;
  i[0] = tex1Dfetch<int>(lin, 7);
  char4 c = tex1Dfetch<char4>(lin, 2);
  i[1] = c.x; i[2] = c.y; i[3] = c.z; i[4] = c.w;
  uint2 u = tex2D<uint2>(t, 0.0f, 0.0f);
  i[5] = (int)u.y;
}

// One tex1Dfetch per thread: the texture unit from many CTAs at once.
extern "C" __global__ void texture_fetch_grid(cudaTextureObject_t lin, int* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = tex1Dfetch<int>(lin, i);
}

extern "C" __global__ void surface_rw(cudaSurfaceObject_t s, int* out) {
  int v;
  surf2Dread(&v, s, 8, 3);
  out[0] = v;
  surf2Dwrite(v + 1, s, 12, 3);
  surf2Dread(&v, s, 400, 3, cudaBoundaryModeZero);
  out[1] = v;
  short2 p = surf1Dread<short2>(s, 4);
  out[2] = p.x; out[3] = p.y;
  surf2DLayeredwrite(make_int2(5, 6), s, 0, 1, 2);
  if (out[4] == 1) {  // outside, trap mode: the kernel traps
    surf2Dread(&v, s, 400, 3);
    out[4] = v;
  }
}

// Lanes exchange values through shared memory with only __syncwarp between (CUB's warp
// transposes do).
extern "C" __global__ void syncwarp_exchange(int* out) {
  __shared__ int s[64];
  s[threadIdx.x] = threadIdx.x * 3;
  __syncwarp();
  out[threadIdx.x] = s[threadIdx.x ^ 31];
}

// Half precision as cuda_fp16.h computes it: scalar (add, fma, compare, max) and packed f16x2
// (add, mul, fma, conversion from two floats).
extern "C" __global__ void half_math(const __half* a, const __half* b, __half* out, float* f) {
  const int i = threadIdx.x;
  const __half x = a[i], y = b[i];
  out[i] = __hfma(x, y, __hadd(x, y));
  const __half2 p = __halves2half2(x, y), q = __halves2half2(y, x);
  const __half2 r = __hfma2(__hadd2(p, q), q, __hmul2(p, p));
  f[2 * i] = __low2float(r);
  f[2 * i + 1] = __high2float(r);
  f[64 + i] = __half2float(__hmax(x, y)) + (__hlt(x, y) ? 100.0f : 0.0f);
  const __half2 m = __floats2half2_rn(__half2float(x) * 0.5f, -2.25f);
  f[96 + i] = __low2float(m) + 10.0f * __high2float(m);
}

// Lane 0 skips a vote the other lanes take (their mask leaves it out), then every lane meets at a
// full-warp vote and ballot: lane 0 must wait there for the others.
extern "C" __global__ void vote_after_partial(int* out, unsigned* ballots) {
  const unsigned lane = threadIdx.x % 32;
  int all = -1;
  if (lane != 0) all = __all_sync(0xfffffffeu, lane > 0);
  const int any = __any_sync(0xffffffffu, lane == 5);
  ballots[threadIdx.x] = __ballot_sync(0xffffffffu, lane % 2);
  out[threadIdx.x] = all * 10 + any;
}

// A __managed__ variable (PTX: .global .attribute(.managed)).
__managed__ unsigned m_hits;
extern "C" __global__ void count_managed() { atomicAdd(&m_hits, 1u); }

// The device heap: malloc in one launch, read and free in the next; new and delete use it too.
extern "C" __global__ void heap_fill(int** slots, int n) {
  const int i = threadIdx.x;
  int* p = static_cast<int*>(malloc(n * sizeof(int)));
  if (p) for (int k = 0; k < n; ++k) p[k] = i * 1000 + k;
  slots[i] = p;
}
extern "C" __global__ void heap_sum(int** slots, int n, long long* out) {
  const int i = threadIdx.x;
  long long s = -1;
  if (slots[i]) {
    s = 0;
    for (int k = 0; k < n; ++k) s += slots[i][k];
  }
  free(slots[i]);
  out[i] = s;
  int* q = new int[4];
  q[3] = i + 7;
  out[blockDim.x + i] = q[3];
  delete[] q;
}

// __dp4a and __dp2a_lo/hi: dot products of packed signed and unsigned bytes and halves.
extern "C" __global__ void dot_products(const int* a, const int* b, int* out) {
  const int i = threadIdx.x;
  out[4 * i] = __dp4a(a[i], b[i], 100);
  out[4 * i + 1] = static_cast<int>(__dp4a(static_cast<unsigned>(a[i]), static_cast<unsigned>(b[i]), 7u));
  out[4 * i + 2] = __dp2a_lo(a[i], b[i], -3);
  out[4 * i + 3] = __dp2a_hi(a[i], b[i], 5);
}

// Cooperative groups' grid barrier (%envreg1:%envreg2 workspace, an atomic arrival count, a
// spin on it): every thread sees every other block's writes after each grid.sync().
#include <cooperative_groups.h>
extern "C" __global__ void grid_rotate(int* data, int* out, int rounds) {
  cooperative_groups::grid_group g = cooperative_groups::this_grid();
  const unsigned n = static_cast<unsigned>(g.size()), r = static_cast<unsigned>(g.thread_rank());
  data[r] = static_cast<int>(r);
  for (int k = 0; k < rounds; ++k) {
    g.sync();
    const int next = data[(r + 1) % n];  // another block's thread for the last of each block
    g.sync();
    data[r] = next;
  }
  g.sync();
  out[r] = data[r];
}

// The last step of NVIDIA's reduction sample (reduce7): only lanes 0..7 shuffle, under their
// ballot's mask, and their sources 8..31 lie outside it (undefined in PTX; such code relies on
// them adding nothing).
extern "C" __global__ void partial_mask_sum(const int* in, int* out) {
  int v = 0;
  const unsigned mask = __ballot_sync(0xffffffffu, threadIdx.x < 8);
  if (threadIdx.x < 8) {
    v = in[threadIdx.x];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(mask, v, offset);
  }
  if (threadIdx.x == 0) *out = v;
}

// Each block waits for the block before it to publish its running total (as CUB's decoupled
// look-back does), then publishes its own: it needs blocks to start in order.
extern "C" __global__ void chained_blocks(const int* in, volatile int* flags, volatile long long* totals) {
  __shared__ unsigned long long block_sum;
  if (threadIdx.x == 0) block_sum = 0;
  __syncthreads();
  atomicAdd(&block_sum, static_cast<unsigned long long>(in[blockIdx.x * blockDim.x + threadIdx.x]));
  __syncthreads();
  if (threadIdx.x != 0) return;
  long long before = 0;
  if (blockIdx.x > 0) {
    while (flags[blockIdx.x - 1] == 0) {
    }
    before = totals[blockIdx.x - 1];
  }
  totals[blockIdx.x] = before + static_cast<long long>(block_sum);
  __threadfence();
  flags[blockIdx.x] = 1;
}

// Every thread adds to 64-, 32- and 16-bit counters; the 16-bit one shares its word with a
// neighbour that must keep its value.
extern "C" __global__ void counters(unsigned long long* wide, int* word, unsigned short* halves, int* after_print) {
  atomicAdd(wide, 3ull);
  atomicAdd(word, 1);
  unsigned short seen = halves[0], assumed;
  do {
    assumed = seen;
    seen = atomicCAS(&halves[0], assumed, static_cast<unsigned short>(assumed + 1));
  } while (seen != assumed);
  if (threadIdx.x == 0 && blockIdx.x % 16 == 0) {
    printf("block %d\n", blockIdx.x);
    atomicAdd(after_print, 1);
  }
}

// Thread 0 waits for a flag the block's last thread sets (a hand-made signal, as a lock or a
// producer/consumer pair within a block would): the interpreter must let the later thread run.
extern "C" __global__ void wait_for_later_thread(int* out) {
  __shared__ volatile int flag;
  if (threadIdx.x == 0) flag = 0;
  __syncthreads();
  if (threadIdx.x == 0) {
    while (flag == 0) {
    }
    out[blockIdx.x] = flag;
  }
  if (threadIdx.x == blockDim.x - 1) flag = 42 + blockIdx.x;
  __syncthreads();
}

// Warp-synchronous code from before __syncwarp (Professional CUDA C's reduceUnrollWarp8, and
// many course reductions): the last 32 partial sums are folded through a volatile pointer with
// no barrier, relying on each lane's access landing before the next access of any lane.
extern "C" __global__ void reduce_unrolled_last_warp(const int* in, int* out, unsigned n) {
  unsigned tid = threadIdx.x;
  unsigned idx = blockIdx.x * blockDim.x * 8 + threadIdx.x;
  int* idata = const_cast<int*>(in) + blockIdx.x * blockDim.x * 8;
  if (idx + 7 * blockDim.x < n) {
    int sum = 0;
    for (int k = 0; k < 8; ++k) sum += in[idx + k * blockDim.x];
    const_cast<int*>(in)[idx] = sum;
  }
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 32; stride >>= 1) {
    if (tid < stride) idata[tid] += idata[tid + stride];
    __syncthreads();
  }
  if (tid < 32) {
    volatile int* vmem = idata;
    vmem[tid] += vmem[tid + 32];
    vmem[tid] += vmem[tid + 16];
    vmem[tid] += vmem[tid + 8];
    vmem[tid] += vmem[tid + 4];
    vmem[tid] += vmem[tid + 2];
    vmem[tid] += vmem[tid + 1];
  }
  if (tid == 0) out[blockIdx.x] = idata[0];
}
