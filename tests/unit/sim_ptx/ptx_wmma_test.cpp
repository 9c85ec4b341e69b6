// Tensor cores on the PTX interpreter: nvcuda::wmma's loads, stores and products in every
// shape and type it runs, with each layout and state space, checked against products computed
// here. Kernels from kernels_sm80.cu; each is one warp's tile (two warps in wmma_f16_shared).
#include <catch2/catch.hpp>

#include <climits>
#include <cstring>
#include <vector>

#include "ptx_test_support.h"

using namespace vgpu::executor::sim::ptx;
using namespace vgpu::executor::sim::ptx::test;

namespace {

using h16 = _Float16;  // the host compiler's IEEE half

uint16_t bf16(float v) {  // exact for the small integers used here
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return static_cast<uint16_t>(bits >> 16);
}

Result run_warps(const char* entry, const Params& params, uint32_t threads = 32) {
  Launch l{{1, 1, 1}, {threads, 1, 1}, 0, params.bytes.data(), params.bytes.size()};
  return run(program_sm80(), entry, l, {});
}

int a_value(int i, int k) { return (i * 3 + k) % 7 - 3; }
int b_value(int k, int j) { return (k + 2 * j) % 5 - 2; }

}  // namespace

TEST_CASE("wmma f16: a 16x16x16 product scaled element-wise, row- and column-major, every stride 16") {
  std::vector<h16> a(256), b(256);
  std::vector<float> c(256), d(256, -1.f);
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 16; ++k) a[i * 16 + k] = static_cast<h16>(static_cast<float>(a_value(i, k)));
  for (int k = 0; k < 16; ++k)
    for (int j = 0; j < 16; ++j) b[j * 16 + k] = static_cast<h16>(static_cast<float>(b_value(k, j)));  // column-major
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) c[i * 16 + j] = static_cast<float>(i - j);
  REQUIRE_OK(run_warps("wmma_f16_scaled",
                       Params().add(a.data()).add(b.data()).add(c.data()).add(d.data()).add(2.0f).add(0.5f)));
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int k = 0; k < 16; ++k) sum += a_value(i, k) * b_value(k, j);
      INFO("d[" << i << "][" << j << "]");
      CHECK(d[j * 16 + i] == 2.0f * static_cast<float>(sum) + 0.5f * c[i * 16 + j]);  // stored column-major
    }
  }
}

TEST_CASE("wmma f16: 32x8x16 from shared memory with a stride of 24, an f16 accumulator, two warps") {
  std::vector<h16> a(32 * 16), b(16 * 8), d(2 * 32 * 8, static_cast<h16>(-1.f));
  for (int i = 0; i < 32; ++i)
    for (int k = 0; k < 16; ++k) a[i * 16 + k] = static_cast<h16>(static_cast<float>(a_value(i, k)));
  for (int k = 0; k < 16; ++k)
    for (int j = 0; j < 8; ++j) b[k * 8 + j] = static_cast<h16>(static_cast<float>(b_value(k, j)));
  REQUIRE_OK(run_warps("wmma_f16_shared", Params().add(a.data()).add(b.data()).add(d.data()), 64));
  for (int warp = 0; warp < 2; ++warp) {
    for (int i = 0; i < 32; ++i) {
      for (int j = 0; j < 8; ++j) {
        int sum = warp + 1;  // the accumulator each warp filled
        for (int k = 0; k < 16; ++k) sum += a_value(i, k) * b_value(k, j);
        INFO("warp " << warp << ", d[" << i << "][" << j << "]");
        CHECK(static_cast<float>(d[warp * 256 + i * 8 + j]) == static_cast<float>(sum));
      }
    }
  }
}

TEST_CASE("wmma bf16: 8x32x16, A column-major, the accumulator loaded from memory") {
  std::vector<uint16_t> a(8 * 16), b(16 * 32);
  std::vector<float> c(8 * 32), d(8 * 32, -1.f);
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 16; ++k) a[k * 8 + i] = bf16(static_cast<float>(a_value(i, k)));  // column-major, stride 8
  for (int k = 0; k < 16; ++k)
    for (int j = 0; j < 32; ++j) b[k * 32 + j] = bf16(static_cast<float>(b_value(k, j)));
  for (int i = 0; i < 8 * 32; ++i) c[i] = static_cast<float>(i % 11);
  REQUIRE_OK(run_warps("wmma_bf16", Params().add(a.data()).add(b.data()).add(c.data()).add(d.data())));
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 32; ++j) {
      int sum = 0;
      for (int k = 0; k < 16; ++k) sum += a_value(i, k) * b_value(k, j);
      INFO("d[" << i << "][" << j << "]");
      CHECK(d[i * 32 + j] == static_cast<float>(sum) + c[i * 32 + j]);
    }
  }
}

TEST_CASE("wmma tf32: 16x16x8 on inputs rounded to tf32's 10 mantissa bits first (cvt.rna.tf32.f32)") {
  std::vector<float> a(16 * 8), b(16 * 8), d(256, -1.f);
  // m * (1 + 2^-12) rounds to m in tf32 for m = 1, 2, 3: the product of the rounded inputs is
  // an integer, and one of the unrounded inputs would not be.
  auto a_tf = [](int i, int k) { return (i + k) % 3 + 1; };
  auto b_tf = [](int k, int j) { return (k * j) % 3 + 1; };
  constexpr float kOff = 1.0f + 1.0f / 4096;
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 8; ++k) a[i * 8 + k] = static_cast<float>(a_tf(i, k)) * kOff;
  for (int k = 0; k < 8; ++k)
    for (int j = 0; j < 16; ++j) b[j * 8 + k] = static_cast<float>(b_tf(k, j)) * kOff;  // column-major
  REQUIRE_OK(run_warps("wmma_tf32", Params().add(a.data()).add(b.data()).add(d.data())));
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int k = 0; k < 8; ++k) sum += a_tf(i, k) * b_tf(k, j);
      INFO("d[" << i << "][" << j << "]");
      CHECK(d[i * 16 + j] == static_cast<float>(sum));
    }
  }
}

TEST_CASE("wmma f64: 8x8x4 in double precision") {
  std::vector<double> a(8 * 4), b(4 * 8), d(64, -1);
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 4; ++k) a[i * 4 + k] = a_value(i, k) * 0.25;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 8; ++j) b[k * 8 + j] = b_value(k, j) * 1.5;
  REQUIRE_OK(run_warps("wmma_f64", Params().add(a.data()).add(b.data()).add(d.data())));
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      double sum = 0.5;  // the filled accumulator
      for (int k = 0; k < 4; ++k) sum += a[i * 4 + k] * b[k * 8 + j];
      INFO("d[" << i << "][" << j << "]");
      CHECK(d[i * 8 + j] == sum);
    }
  }
}

TEST_CASE("wmma s8: 16x16x16 integers, saturating where the sum passes INT_MAX") {
  std::vector<signed char> a(256), b(256);
  std::vector<int> c(256), d(256, -1);
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 16; ++k) a[i * 16 + k] = static_cast<signed char>(i == 0 ? 127 : a_value(i, k) * 40);
  for (int k = 0; k < 16; ++k)
    for (int j = 0; j < 16; ++j) b[j * 16 + k] = static_cast<signed char>(j == 0 ? 127 : b_value(k, j) * 60);
  for (int i = 0; i < 256; ++i) c[i] = i - 100;
  c[0] = INT_MAX - 1000;  // + 16 * 127 * 127 passes INT_MAX: .satfinite clamps
  REQUIRE_OK(run_warps("wmma_s8", Params().add(a.data()).add(b.data()).add(c.data()).add(d.data())));
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) {
      long long sum = c[i * 16 + j];
      for (int k = 0; k < 16; ++k) sum += static_cast<long long>(a[i * 16 + k]) * b[j * 16 + k];
      INFO("d[" << i << "][" << j << "]");
      CHECK(d[i * 16 + j] == static_cast<int>(std::min<long long>(sum, INT_MAX)));
    }
  }
  CHECK(d[0] == INT_MAX);
}

TEST_CASE("wmma forms the interpreter does not run are refused by name") {
  std::vector<int> d(64, -1);
  const Result r = run_warps("wmma_s4", Params().add(d.data()).add(d.data()).add(d.data()));
  CHECK(r.outcome == Outcome::kUnsupported);
  CHECK_THAT(r.message, Catch::Contains("wmma.load.a.sync.aligned.row.m8n8k32.global.s4"));
  CHECK(d[0] == -1);  // nothing ran
}
