// class_kernels: the kernels a CUDA course writes in its first weeks, each
// checked against the CPU: a tiled matrix product in __shared__ memory with
// __syncthreads, a block sum reduction, a warp-shuffle reduction, a histogram
// with atomicAdd on shared and global memory, a float sum with atomicAdd, a
// 1-D stencil with dynamic shared memory and halo cells, and a device
// function with a local array. No sim plug-in implements these kernels: on
// the sim backend they run from their PTX (the interpreter), as any program
// a student writes does.
#include <cmath>
#include <cstdint>
#include <vector>

#include "common.h"

constexpr int kTile = 16;

__global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float ta[kTile][kTile];
  __shared__ float tb[kTile][kTile];
  const int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
  float sum = 0.0f;
  for (int t = 0; t < (n + kTile - 1) / kTile; ++t) {
    const int ac = t * kTile + threadIdx.x, br = t * kTile + threadIdx.y;
    ta[threadIdx.y][threadIdx.x] = row < n && ac < n ? a[row * n + ac] : 0.0f;
    tb[threadIdx.y][threadIdx.x] = br < n && col < n ? b[br * n + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < kTile; ++k) sum += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < n) c[row * n + col] = sum;
}

__global__ void block_sum(const int* in, long long* out, int n) {
  __shared__ int partial[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(reinterpret_cast<unsigned long long*>(out),
                                  static_cast<unsigned long long>(partial[0]));
}

__global__ void warp_sum(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : 0.0f;
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}

__global__ void histogram(const unsigned char* in, unsigned* bins, int n) {
  __shared__ unsigned local[64];
  for (int b = threadIdx.x; b < 64; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[in[i] % 64], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 64; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

__global__ void stencil(const float* in, float* out, int n, int radius) {
  extern __shared__ float cells[];  // blockDim.x + 2 * radius
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  const int l = threadIdx.x + radius;
  cells[l] = g < n ? in[g] : 0.0f;
  if (threadIdx.x < radius) {
    cells[l - radius] = g >= radius ? in[g - radius] : 0.0f;
    const int right = g + blockDim.x;
    cells[l + blockDim.x] = right < n ? in[right] : 0.0f;
  }
  __syncthreads();
  if (g >= n) return;
  float s = 0.0f;
  for (int k = -radius; k <= radius; ++k) s += cells[l + k];
  out[g] = s;
}

__device__ __noinline__ int digit_sum(unsigned v) {
  int digits[12];
  int count = 0;
  do {
    digits[count++] = static_cast<int>(v % 10);
    v /= 10;
  } while (v != 0);
  int s = 0;
  for (int k = count - 1; k >= 0; --k) s += digits[k];
  return s;
}

__global__ void digit_sums(const unsigned* in, int* out, double* roots, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = digit_sum(in[i]);
  roots[i] = sqrt(static_cast<double>(in[i]));
}

template <typename T>
static T* to_device(const std::vector<T>& v) {
  T* d = nullptr;
  CUDA_OK(cudaMalloc(&d, v.size() * sizeof(T)));
  CUDA_OK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
static std::vector<T> to_host(const T* d, size_t n) {
  std::vector<T> v(n);
  CUDA_OK(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

static void check_matmul() {
  const int n = 70;  // not a multiple of the tile
  std::vector<float> a(n * n), b(n * n), want(n * n, 0.0f);
  for (int i = 0; i < n * n; ++i) {
    a[i] = static_cast<float>(i % 7) - 3.0f;
    b[i] = static_cast<float>(i % 5) * 0.5f;
  }
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < n; ++k)
      for (int c = 0; c < n; ++c) want[r * n + c] += a[r * n + k] * b[k * n + c];
  float *da = to_device(a), *db = to_device(b), *dc = nullptr;
  CUDA_OK(cudaMalloc(&dc, n * n * sizeof(float)));
  const dim3 block(kTile, kTile), grid((n + kTile - 1) / kTile, (n + kTile - 1) / kTile);
  matmul_tiled<<<grid, block>>>(da, db, dc, n);
  CUDA_OK(cudaGetLastError());
  const std::vector<float> c = to_host(dc, n * n);
  for (int i = 0; i < n * n; ++i)
    if (std::fabs(c[i] - want[i]) > 1e-3f) vt::fail("matmul: c[%d] = %g, expected %g", i, c[i], want[i]);
  vt::check(true, "tiled matrix product %dx%d in shared memory", n, n);
  cudaFree(da); cudaFree(db); cudaFree(dc);
}

static void check_reductions() {
  const int n = 100003;
  std::vector<int> in(n);
  long long want = 0;
  for (int i = 0; i < n; ++i) want += in[i] = (i * 37) % 1001 - 500;
  int* din = to_device(in);
  long long* dsum = nullptr;
  CUDA_OK(cudaMalloc(&dsum, sizeof(long long)));
  CUDA_OK(cudaMemset(dsum, 0, sizeof(long long)));
  block_sum<<<(n + 255) / 256, 256>>>(din, dsum, n);
  const long long got = to_host(dsum, 1)[0];
  if (got != want) vt::fail("block_sum: %lld, expected %lld", got, want);
  vt::check(true, "block reduction in shared memory: %lld", got);

  std::vector<float> f(n);
  double fwant = 0.0;
  for (int i = 0; i < n; ++i) fwant += f[i] = static_cast<float>(i % 16) * 0.25f;
  float* df = to_device(f);
  float* dfsum = nullptr;
  CUDA_OK(cudaMalloc(&dfsum, sizeof(float)));
  CUDA_OK(cudaMemset(dfsum, 0, sizeof(float)));
  warp_sum<<<(n + 127) / 128, 128>>>(df, dfsum, n);
  const float fgot = to_host(dfsum, 1)[0];
  if (std::fabs(fgot - fwant) > 1e-3 * fwant) vt::fail("warp_sum: %g, expected %g", fgot, fwant);
  vt::check(true, "warp shuffle reduction with atomicAdd: %g", fgot);
  cudaFree(din); cudaFree(dsum); cudaFree(df); cudaFree(dfsum);
}

static void check_histogram() {
  const int n = 50000;
  std::vector<unsigned char> in(n);
  std::vector<unsigned> want(64, 0);
  for (int i = 0; i < n; ++i) ++want[(in[i] = static_cast<unsigned char>((i * 131) % 251)) % 64];
  unsigned char* din = to_device(in);
  unsigned* dbins = nullptr;
  CUDA_OK(cudaMalloc(&dbins, 64 * sizeof(unsigned)));
  CUDA_OK(cudaMemset(dbins, 0, 64 * sizeof(unsigned)));
  histogram<<<8, 128>>>(din, dbins, n);
  const std::vector<unsigned> bins = to_host(dbins, 64);
  for (int b = 0; b < 64; ++b)
    if (bins[b] != want[b]) vt::fail("histogram: bin %d = %u, expected %u", b, bins[b], want[b]);
  vt::check(true, "histogram with shared and global atomics");
  cudaFree(din); cudaFree(dbins);
}

static void check_stencil() {
  const int n = 5000, radius = 3, block = 128;
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i % 11);
  float* din = to_device(in);
  float* dout = nullptr;
  CUDA_OK(cudaMalloc(&dout, n * sizeof(float)));
  stencil<<<(n + block - 1) / block, block, (block + 2 * radius) * sizeof(float)>>>(din, dout, n, radius);
  const std::vector<float> out = to_host(dout, n);
  for (int i = 0; i < n; ++i) {
    float s = 0.0f;
    for (int k = -radius; k <= radius; ++k) s += i + k >= 0 && i + k < n ? in[i + k] : 0.0f;
    if (out[i] != s) vt::fail("stencil: out[%d] = %g, expected %g", i, out[i], s);
  }
  vt::check(true, "1-D stencil with dynamic shared memory");
  cudaFree(din); cudaFree(dout);
}

static void check_device_function() {
  const int n = 1000;
  std::vector<unsigned> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<unsigned>(i) * 2654435761u;
  unsigned* din = to_device(in);
  int* dout = nullptr;
  double* droots = nullptr;
  CUDA_OK(cudaMalloc(&dout, n * sizeof(int)));
  CUDA_OK(cudaMalloc(&droots, n * sizeof(double)));
  digit_sums<<<(n + 63) / 64, 64>>>(din, dout, droots, n);
  const std::vector<int> out = to_host(dout, n);
  const std::vector<double> roots = to_host(droots, n);
  for (int i = 0; i < n; ++i) {
    int s = 0;
    for (unsigned v = in[i]; v; v /= 10) s += static_cast<int>(v % 10);
    if (out[i] != s) vt::fail("digit_sum(%u) = %d, expected %d", in[i], out[i], s);
    if (roots[i] != std::sqrt(static_cast<double>(in[i])))
      vt::fail("sqrt(%u) = %.17g, expected %.17g", in[i], roots[i], std::sqrt(static_cast<double>(in[i])));
  }
  vt::check(true, "a device function with a local array; double sqrt");
  cudaFree(din); cudaFree(dout); cudaFree(droots);
}

int main() {
  vt::set_name("class_kernels");
  check_matmul();
  check_reductions();
  check_histogram();
  check_stencil();
  check_device_function();
  CUDA_OK(cudaDeviceSynchronize());
  vt::pass();
}
