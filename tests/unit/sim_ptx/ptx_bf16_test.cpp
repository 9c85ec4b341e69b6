// bfloat16 on the PTX interpreter: cuda_bf16.h's arithmetic as nvcc compiles it for compute_80
// (kernels_sm80.cu's bf16_math: fma.rn.bf16 for +, -, *), and the forms PTX for compute_90 has
// besides (add, sub, mul, min, max and setp on bf16 and bf16x2, cvt from integers), each result
// rounded to bfloat16 (to nearest even) as a GPU rounds it.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ptx_test_support.h"

using namespace vgpu::executor::sim::ptx;
using namespace vgpu::executor::sim::ptx::test;

namespace {

float from_bf16(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The reference rounding: an f32 to the nearest bfloat16, ties to even.
uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint32_t lsb = (bits >> 16) & 1;
  return static_cast<uint16_t>((bits + 0x7fff + lsb) >> 16);
}

float round_bf16(float f) { return from_bf16(to_bf16(f)); }

}  // namespace

TEST_CASE("bf16: cuda_bf16.h's arithmetic for compute_80, each result rounded to bfloat16") {
  constexpr int n = 32;
  std::vector<uint16_t> a(n), b(n), out(6 * n);
  std::vector<uint32_t> pairs(n);
  std::vector<float> f(n);
  for (int i = 0; i < n; ++i) {
    a[i] = to_bf16(static_cast<float>(i) * 0.37f - 5.0f);  // values that need rounding
    b[i] = to_bf16(1.0f + static_cast<float>(i % 5) * 0.013f);
  }
  Params p = Params().add(a.data()).add(b.data()).add(out.data()).add(pairs.data()).add(f.data());
  REQUIRE_OK(run(program_sm80(), "bf16_math", Launch{{1, 1, 1}, {n, 1, 1}, 0, p.bytes.data(), p.bytes.size()}, {}));
  for (int i = 0; i < n; ++i) {
    const float x = from_bf16(a[i]), y = from_bf16(b[i]);
    INFO("thread " << i << ": x " << x << ", y " << y);
    CHECK(from_bf16(out[i * 6 + 0]) == round_bf16(x + y));
    CHECK(from_bf16(out[i * 6 + 1]) == round_bf16(x * y));
    CHECK(from_bf16(out[i * 6 + 2]) == round_bf16(x - y));
    CHECK(from_bf16(out[i * 6 + 3]) == round_bf16(std::fma(x, y, x)));
    CHECK(from_bf16(out[i * 6 + 4]) == std::fmax(x, y));
    CHECK(from_bf16(out[i * 6 + 5]) == -x);
    CHECK(f[i] == x + (x < y ? 100.f : 0.f));
    const float lo = x, hi = round_bf16(y + 0.3f);  // __floats2bfloat162_rn(x, y + 0.3): x in the low half
    CHECK(from_bf16(static_cast<uint16_t>(pairs[i])) == round_bf16(std::fma(lo, lo, lo)));
    CHECK(from_bf16(static_cast<uint16_t>(pairs[i] >> 16)) == round_bf16(std::fma(hi, hi, hi)));
  }
}

TEST_CASE("bf16: the compute_90 forms (add, sub, mul, min, max, setp, packed pairs, cvt from integers)") {
  const std::string text =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry k(.param .u64 out) {\n.reg .b16 %rs<12>;\n.reg .b32 %r<8>;\n.reg .pred %p<3>;\n"
      ".reg .b64 %rd<3>;\n.reg .f32 %f<3>;\n"
      "ld.param.u64 %rd1, [out];\n"
      "mov.b16 %rs1, 0x3fc0;\n"   // 1.5
      "mov.b16 %rs2, 0x4020;\n"   // 2.5
      "add.bf16 %rs3, %rs1, %rs2;\n"
      "sub.bf16 %rs4, %rs1, %rs2;\n"
      "mul.bf16 %rs5, %rs1, %rs2;\n"
      "min.bf16 %rs6, %rs1, %rs2;\n"
      "max.bf16 %rs7, %rs1, %rs2;\n"
      "mov.u32 %r1, 1001;\n"
      "cvt.rn.bf16.s32 %rs8, %r1;\n"  // 1001 rounds to 1000 (8 mantissa bits)
      "setp.lt.bf16 %p1, %rs1, %rs2;\n"
      "selp.u16 %rs9, 1, 0, %p1;\n"
      "mov.b32 %r2, {%rs1, %rs2};\n"
      "add.bf16x2 %r3, %r2, %r2;\n"
      "mul.bf16x2 %r4, %r2, %r2;\n"
      "st.global.v4.u16 [%rd1], {%rs3, %rs4, %rs5, %rs6};\n"
      "st.global.v4.u16 [%rd1+8], {%rs7, %rs8, %rs9, %rs9};\n"
      "st.global.v2.u32 [%rd1+16], {%r3, %r4};\n"
      "ret;\n}\n";
  std::string why;
  auto prog = parse(text, &why);
  INFO(why);
  REQUIRE(prog);
  uint16_t out[12] = {};
  Params p = Params().add(&out[0]);
  REQUIRE_OK(run(*prog, "k", Launch{{1, 1, 1}, {1, 1, 1}, 0, p.bytes.data(), p.bytes.size()}, {}));
  CHECK(from_bf16(out[0]) == 4.0f);
  CHECK(from_bf16(out[1]) == -1.0f);
  CHECK(from_bf16(out[2]) == 3.75f);
  CHECK(from_bf16(out[3]) == 1.5f);
  CHECK(from_bf16(out[4]) == 2.5f);
  CHECK(from_bf16(out[5]) == 1000.0f);
  CHECK(out[6] == 1);  // 1.5 < 2.5
  CHECK(from_bf16(out[8]) == 3.0f);   // the pair's low half: 1.5 + 1.5
  CHECK(from_bf16(out[9]) == 5.0f);   // its high half: 2.5 + 2.5
  CHECK(from_bf16(out[10]) == 2.25f);
  CHECK(from_bf16(out[11]) == 6.25f);
}
