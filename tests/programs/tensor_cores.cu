// tensor_cores: matrix products on tensor cores through nvcuda::wmma, as course material and
// NVIDIA's samples write them, each checked against the CPU:
//
//   1. a 64x64x64 GEMM in half precision with float accumulators, each warp one 16x16 tile
//      of C, walking K in steps of 16, then C = alpha * A*B + beta * C element-wise over
//      fragments (the blog's simpleTensorCoreGEMM, small);
//   2. the same tile in 8-bit integers with int accumulators;
//   3. bf16, tf32 (inputs rounded with __float_to_tf32) and double tiles (sm_80 and later).
//
// Built for sm_80 and sm_90 with compute_90 PTX (tests/programs/CMakeLists.txt): the sim's
// interpreter runs the PTX, a GPU the cubin.
#include <cuda_bf16.h>
#include <mma.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common.h"

using namespace nvcuda;

constexpr int kN = 64;  // every matrix is kN x kN

// C = alpha * A*B + beta * C; A row-major, B column-major, C row-major. One warp per 16x16
// tile of C: blockDim.x = 128 (4 warps), gridDim = (kN / 64, kN / 16).
__global__ void gemm_half(const __half* a, const __half* b, float* c, float alpha, float beta) {
  const int warp_m = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;  // tile row
  const int warp_n = blockIdx.y;                                          // tile column
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, fc;
  wmma::fill_fragment(acc, 0.0f);
  const int row = warp_m * 16, col = warp_n * 16;
  for (int k = 0; k < kN; k += 16) {
    wmma::load_matrix_sync(fa, a + row * kN + k, kN);
    wmma::load_matrix_sync(fb, b + col * kN + k, kN);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::load_matrix_sync(fc, c + row * kN + col, kN, wmma::mem_row_major);
  for (int i = 0; i < fc.num_elements; ++i) fc.x[i] = alpha * acc.x[i] + beta * fc.x[i];
  wmma::store_matrix_sync(c + row * kN + col, fc, kN, wmma::mem_row_major);
}

__global__ void tile_s8(const signed char* a, const signed char* b, int* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> acc;
  wmma::fill_fragment(acc, 0);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
}

__global__ void tile_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 1.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(c, acc, 16, wmma::mem_col_major);
}

__global__ void tile_tf32(const float* a, const float* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  wmma::load_matrix_sync(fa, a, 8);
  wmma::load_matrix_sync(fb, b, 16);
  for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
  for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
}

__global__ void tile_f64(const double* a, const double* b, double* c) {
  wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 8, 8, 4, double> acc;
  wmma::load_matrix_sync(acc, c, 8, wmma::mem_row_major);
  wmma::load_matrix_sync(fa, a, 4);
  wmma::load_matrix_sync(fb, b, 8);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(c, acc, 8, wmma::mem_row_major);
}

namespace {

template <typename T>
T* to_device(const std::vector<T>& host) {
  T* p = nullptr;
  CUDA_OK(cudaMalloc(&p, host.size() * sizeof(T)));
  CUDA_OK(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

template <typename T>
std::vector<T> from_device(const T* p, size_t n) {
  std::vector<T> host(n);
  CUDA_OK(cudaMemcpy(host.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

void half_gemm() {
  std::vector<__half> a(kN * kN), b(kN * kN);
  std::vector<float> af(kN * kN), bf(kN * kN), c(kN * kN);
  for (int i = 0; i < kN * kN; ++i) {
    af[i] = static_cast<float>((i * 7) % 9 - 4) * 0.25f;  // exact in half
    bf[i] = static_cast<float>((i * 5) % 7 - 3) * 0.5f;
    a[i] = __float2half(af[i]);
    b[i] = __float2half(bf[i]);  // read as column-major: b[col * kN + k]
    c[i] = static_cast<float>(i % 13);
  }
  __half* da = to_device(a);
  __half* db = to_device(b);
  float* dc = to_device(c);
  const float alpha = 2.0f, beta = -0.5f;
  gemm_half<<<dim3(kN / 64, kN / 16), 128>>>(da, db, dc, alpha, beta);
  LAUNCH_OK();
  const std::vector<float> got = from_device(dc, c.size());
  double worst = 0;
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      double sum = 0;
      for (int k = 0; k < kN; ++k) sum += static_cast<double>(af[i * kN + k]) * bf[j * kN + k];
      const double want = alpha * sum + beta * c[i * kN + j];
      worst = std::fmax(worst, std::fabs(got[i * kN + j] - want));
    }
  }
  vt::check(worst < 1e-3, "a 64x64x64 half GEMM on tensor cores, scaled over fragments (worst error %g)", worst);
  CUDA_OK(cudaFree(da));
  CUDA_OK(cudaFree(db));
  CUDA_OK(cudaFree(dc));
}

void int8_tile() {
  std::vector<signed char> a(256), b(256);
  for (int i = 0; i < 256; ++i) {
    a[i] = static_cast<signed char>((i * 11) % 255 - 127);
    b[i] = static_cast<signed char>((i * 3) % 200 - 100);
  }
  signed char* da = to_device(a);
  signed char* db = to_device(b);
  int* dc = nullptr;
  CUDA_OK(cudaMalloc(&dc, 256 * sizeof(int)));
  tile_s8<<<1, 32>>>(da, db, dc);
  LAUNCH_OK();
  const std::vector<int> got = from_device(dc, 256);
  int wrong = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int k = 0; k < 16; ++k) sum += a[i * 16 + k] * b[k * 16 + j];
      wrong += got[i * 16 + j] != sum;
    }
  vt::check(wrong == 0, "an 8-bit integer tile, exact (%d of 256 wrong)", wrong);
  CUDA_OK(cudaFree(da));
  CUDA_OK(cudaFree(db));
  CUDA_OK(cudaFree(dc));
}

void bf16_tile() {
  std::vector<__nv_bfloat16> a(256), b(256);
  std::vector<float> af(256), bf(256);
  for (int i = 0; i < 256; ++i) {
    af[i] = static_cast<float>(i % 9 - 4);
    bf[i] = static_cast<float>(i % 5 - 2) * 0.5f;
    a[i] = __float2bfloat16(af[i]);
    b[i] = __float2bfloat16(bf[i]);
  }
  __nv_bfloat16* da = to_device(a);
  __nv_bfloat16* db = to_device(b);
  float* dc = nullptr;
  CUDA_OK(cudaMalloc(&dc, 256 * sizeof(float)));
  tile_bf16<<<1, 32>>>(da, db, dc);
  LAUNCH_OK();
  const std::vector<float> got = from_device(dc, 256);
  int wrong = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float sum = 1.0f;
      for (int k = 0; k < 16; ++k) sum += af[i * 16 + k] * bf[k * 16 + j];
      wrong += got[j * 16 + i] != sum;  // stored column-major
    }
  vt::check(wrong == 0, "a bf16 tile (%d of 256 wrong)", wrong);
  CUDA_OK(cudaFree(da));
  CUDA_OK(cudaFree(db));
  CUDA_OK(cudaFree(dc));
}

void tf32_tile() {
  std::vector<float> a(16 * 8), b(8 * 16);
  for (int i = 0; i < 16 * 8; ++i) {
    a[i] = static_cast<float>(i % 4 + 1) * (1.0f + 1.0f / 4096);  // rounds to i % 4 + 1 in tf32
    b[i] = static_cast<float>(i % 3 - 1);
  }
  float* da = to_device(a);
  float* db = to_device(b);
  float* dc = nullptr;
  CUDA_OK(cudaMalloc(&dc, 256 * sizeof(float)));
  tile_tf32<<<1, 32>>>(da, db, dc);
  LAUNCH_OK();
  const std::vector<float> got = from_device(dc, 256);
  int wrong = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int k = 0; k < 8; ++k) sum += ((i * 8 + k) % 4 + 1) * ((k * 16 + j) % 3 - 1);
      wrong += got[i * 16 + j] != static_cast<float>(sum);
    }
  vt::check(wrong == 0, "a tf32 tile on inputs rounded to tf32 (%d of 256 wrong)", wrong);
  CUDA_OK(cudaFree(da));
  CUDA_OK(cudaFree(db));
  CUDA_OK(cudaFree(dc));
}

void f64_tile() {
  std::vector<double> a(32), b(32), c(64);
  for (int i = 0; i < 32; ++i) {
    a[i] = 0.1 * (i % 7);
    b[i] = 0.3 * (i % 5) - 0.5;
  }
  for (int i = 0; i < 64; ++i) c[i] = i;
  double* da = to_device(a);
  double* db = to_device(b);
  double* dc = to_device(c);
  tile_f64<<<1, 32>>>(da, db, dc);
  LAUNCH_OK();
  const std::vector<double> got = from_device(dc, 64);
  double worst = 0;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      double sum = c[i * 8 + j];
      for (int k = 0; k < 4; ++k) sum += a[i * 4 + k] * b[k * 8 + j];
      worst = std::fmax(worst, std::fabs(got[i * 8 + j] - sum));
    }
  vt::check(worst < 1e-12, "a double tile (worst error %g)", worst);
  CUDA_OK(cudaFree(da));
  CUDA_OK(cudaFree(db));
  CUDA_OK(cudaFree(dc));
}

}  // namespace

int main() {
  vt::set_name("tensor_cores");
  half_gemm();
  int8_tile();
  bf16_tile();
  tf32_tile();
  f64_tile();
  vt::pass();
}
