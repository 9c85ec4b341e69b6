// The PTX interpreter on nvcc's own output: each kernel of kernels.cu runs through parse() + run()
// on host buffers (global memory is plain host memory here) and is checked against the CPU.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "ptx_test_support.h"

using namespace vgpu::executor::sim::ptx;
using namespace vgpu::executor::sim::ptx::test;

namespace {
__extension__ typedef unsigned __int128 u128;
}  // namespace

TEST_CASE("vector add over 1M threads") {
  const int n = 1 << 20;
  std::vector<float> a(n), b(n), c(n, 0);
  for (int i = 0; i < n; ++i) { a[i] = fl(i) * 0.5f; b[i] = 1.0f - fl(i); }
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE_OK(launch("vector_add", {n / 256, 1, 1}, {256, 1, 1}, Params().add(a.data()).add(b.data()).add(c.data()).add(n)));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN("1M-thread vector_add: " << secs << " s");
  for (int i = 0; i < n; ++i) REQUIRE(c[i] == a[i] + b[i]);
}

TEST_CASE("saxpy with a grid-stride loop") {
  const int n = 1000;
  std::vector<float> x(n), y(n), want(n);
  for (int i = 0; i < n; ++i) { x[i] = fl(i); y[i] = fl(2 * i + 1); want[i] = 3.0f * x[i] + y[i]; }
  REQUIRE_OK(launch("saxpy", {3, 1, 1}, {64, 1, 1}, Params().add(n).add(3.0f).add(x.data()).add(y.data())));
  for (int i = 0; i < n; ++i) REQUIRE(y[i] == want[i]);
}

TEST_CASE("tiled matrix multiply with shared memory and barriers") {
  const int n = 20;
  std::vector<float> a(n * n), b(n * n), c(n * n, -1);
  for (int i = 0; i < n * n; ++i) { a[i] = fl((i % 7) - 3); b[i] = fl(i % 5) * 0.5f; }
  REQUIRE_OK(launch("matmul_tiled", {3, 3, 1}, {8, 8, 1}, Params().add(a.data()).add(b.data()).add(c.data()).add(n)));
  for (int r = 0; r < n; ++r)
    for (int col = 0; col < n; ++col) {
      float s = 0;
      for (int k = 0; k < n; ++k) s += a[r * n + k] * b[k * n + col];
      REQUIRE(c[r * n + col] == Approx(s));
    }
}

TEST_CASE("shared-memory sum reduction") {
  const int n = 1000;
  std::vector<int> in(n), out(4, 0);
  for (int i = 0; i < n; ++i) in[i] = i * 3 - 7;
  REQUIRE_OK(launch("reduce_sum", {4, 1, 1}, {256, 1, 1}, Params().add(in.data()).add(out.data()).add(n)));
  for (int blk = 0; blk < 4; ++blk) {
    int s = 0;
    for (int i = blk * 256; i < std::min(n, blk * 256 + 256); ++i) s += in[i];
    REQUIRE(out[blk] == s);
  }
}

TEST_CASE("warp shuffle reduction") {
  std::vector<float> in(128), out(4, 0);
  for (int i = 0; i < 128; ++i) in[i] = fl(i);
  REQUIRE_OK(launch("warp_reduce", {2, 1, 1}, {64, 1, 1}, Params().add(in.data()).add(out.data())));
  for (int w = 0; w < 4; ++w) {
    float s = 0;
    for (int i = w * 32; i < w * 32 + 32; ++i) s += in[i];
    REQUIRE(out[w] == s);
  }
}

TEST_CASE("vote and shuffle modes") {
  std::vector<int> in(64);
  for (int i = 0; i < 64; ++i) in[i] = (i < 32) ? i + 1 : (i % 3) - 1;
  std::vector<unsigned> ballots(2, 0);
  std::vector<int> outs(2 + 64 * 3, 0);
  REQUIRE_OK(launch("warp_vote", {1, 1, 1}, {64, 1, 1}, Params().add(in.data()).add(ballots.data()).add(outs.data())));
  unsigned want1 = 0;
  for (int i = 32; i < 64; ++i) if (in[i] > 0) want1 |= 1u << (i - 32);
  CHECK(ballots[0] == 0xffffffffu);
  CHECK(ballots[1] == want1);
  for (int i = 0; i < 64; ++i) {
    int base = i / 32 * 32, lane = i % 32;
    CHECK(outs[2 + i * 3] == in[base + (lane ^ 1)]);
    CHECK(outs[3 + i * 3] == in[base + 3]);
    CHECK(outs[4 + i * 3] == in[base + (lane >= 2 ? lane - 2 : lane)]);
  }
  CHECK(outs[0] == 1);  // warp 0: all positive (written before the shuffles' stores)
}

TEST_CASE("atomicAdd histogram and float sum") {
  const int n = 5000;
  std::vector<unsigned char> data(n);
  std::vector<int> bins(16, 0), want(16, 0);
  for (int i = 0; i < n; ++i) { data[i] = (unsigned char)(i * 37 + 11); ++want[data[i] % 16]; }
  REQUIRE_OK(launch("histogram", {20, 1, 1}, {256, 1, 1}, Params().add(data.data()).add(n).add(bins.data())));
  REQUIRE(bins == want);
  std::vector<float> vals(n);
  for (int i = 0; i < n; ++i) vals[i] = fl(i % 10) * 0.25f;
  float sum = 0, want_sum = 0;
  for (float v : vals) want_sum += v;  // in order, as the interpreter runs threads in order
  REQUIRE_OK(launch("atomic_float_sum", {20, 1, 1}, {256, 1, 1}, Params().add(vals.data()).add(n).add(&sum)));
  REQUIRE(sum == Approx(want_sum));
}

TEST_CASE("atomicCAS loop and the other atomics") {
  const int n = 300;
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) in[i] = std::sin(fl(i) * 0.7f) * 100;
  float mx = -1e30f;
  std::vector<unsigned> misc = {0, 0xffffffffu, 0, 0, 0};
  REQUIRE_OK(launch("atomic_cas_max", {2, 1, 1}, {256, 1, 1}, Params().add(in.data()).add(n).add(&mx).add(misc.data())));
  REQUIRE(mx == *std::max_element(in.begin(), in.end()));
  CHECK(misc[0] == n - 1);
  CHECK(misc[1] == 0);
  CHECK(misc[2] == 0xffffffffu);
  CHECK(misc[3] == 7);
  CHECK(misc[4] == n);
}

TEST_CASE("local array indexed dynamically") {
  std::vector<int> idx(64), out(64, 0);
  for (int i = 0; i < 64; ++i) idx[i] = (i * 7) % 16;
  REQUIRE_OK(launch("local_array", {1, 1, 1}, {64, 1, 1}, Params().add(idx.data()).add(out.data())));
  for (int i = 0; i < 64; ++i) REQUIRE(out[i] == idx[i] * idx[i] + i);
}

TEST_CASE("noinline device function call") {
  std::vector<int> out(50, 0);
  REQUIRE_OK(launch("call_func", {1, 1, 1}, {50, 1, 1}, Params().add(out.data())));
  for (int i = 0; i < 50; ++i) {
    unsigned x = i + 1;
    int s = 0;
    while (x != 1 && s < 1000) { x = (x & 1) ? 3 * x + 1 : x / 2; ++s; }
    REQUIRE(out[i] == s);
  }
}

TEST_CASE("integer division, modulo and bit operations") {
  std::vector<int> a = {100, -100, 7, 123456789, -5, 0x7fffffff, 1, -2147483647};
  std::vector<int> b = {7, 7, -3, 1000, 3, 13, 1, 2};
  std::vector<int> out(a.size() * 10, 0);
  REQUIRE_OK(launch("int_ops", {1, 1, 1}, {(uint32_t)a.size(), 1, 1}, Params().add(a.data()).add(b.data()).add(out.data())));
  for (size_t i = 0; i < a.size(); ++i) {
    int x = a[i], y = b[i];
    unsigned ux = x, uy = y;
    unsigned rev = 0;
    for (int k = 0; k < 32; ++k) rev |= ((ux >> k) & 1u) << (31 - k);
    INFO("i=" << i);
    CHECK(out[i * 10 + 0] == x / y);
    CHECK(out[i * 10 + 1] == x % y);
    CHECK(out[i * 10 + 2] == (int)(ux / uy));
    CHECK(out[i * 10 + 3] == (int)(ux % uy));
    CHECK(out[i * 10 + 4] == (int)((unsigned)(x << (y & 7)) ^ (ux >> 3)));
    CHECK(out[i * 10 + 5] == __builtin_popcount(ux) + (ux ? __builtin_clz(ux) : 32));
    CHECK(out[i * 10 + 6] == (int)rev);
    CHECK(out[i * 10 + 7] == ((x >> 2) | (x & y)));
    CHECK(out[i * 10 + 8] == (int)(((long long)x * y) >> 32));
    CHECK(out[i * 10 + 9] == (int)((unsigned)std::min(x, y) * (unsigned)std::max(x, y) + (unsigned)std::abs(x)));
  }
}

TEST_CASE("double precision math") {
  std::vector<double> in = {0.25, 1.0, 2.5, 10.0, 100.0, 1e6};
  std::vector<double> out(in.size() * 4, 0);
  REQUIRE_OK(launch("double_math", {1, 1, 1}, {(uint32_t)in.size(), 1, 1}, Params().add(in.data()).add(out.data())));
  for (size_t i = 0; i < in.size(); ++i) {
    double x = in[i];
    CHECK(out[i * 4 + 0] == Approx(std::sqrt(x)).epsilon(1e-15));
    CHECK(out[i * 4 + 1] == Approx(std::exp(x)).epsilon(1e-14));
    CHECK(out[i * 4 + 2] == Approx(std::sin(x)).epsilon(1e-14).margin(1e-15));
    CHECK(out[i * 4 + 3] == Approx(x * x / 3.0 + 1.5).epsilon(1e-15));
  }
}

TEST_CASE("type conversions") {
  std::vector<float> f = {1.7f, -2.5f, 3.5f, 25.49f, -0.4f};
  std::vector<double> d = {1e10, -7.9, 3.999, 0.1, -1e10};
  std::vector<int> oi(15, 0);
  std::vector<float> of(15, 0);
  std::vector<unsigned char> ob(5, 0);
  REQUIRE_OK(launch("conversions", {1, 1, 1}, {5, 1, 1}, Params().add(f.data()).add(d.data()).add(oi.data()).add(of.data()).add(ob.data())));
  for (int i = 0; i < 5; ++i) {
    INFO("i=" << i);
    CHECK(oi[i * 3 + 0] == (int)f[i]);
    CHECK(oi[i * 3 + 1] == (int)std::nearbyint(f[i]));
    double clamped = std::clamp(d[i], -2147483648.0, 2147483647.0);  // the GPU saturates
    CHECK(oi[i * 3 + 2] == (int)clamped);
    CHECK(of[i * 3 + 0] == (float)d[i]);
    CHECK(of[i * 3 + 1] == (float)(int)f[i]);
    CHECK(of[i * 3 + 2] == (float)(unsigned)(i * 1000));
    float scaled = f[i] * 10.0f;
    CHECK(ob[i] == (scaled < 0 ? 0 : (unsigned char)(unsigned)scaled));  // cvt.rzi.u32 saturates at 0
  }
}

TEST_CASE("2D grid with blockIdx.y and threadIdx.y") {
  const int w = 32, h = 12;
  std::vector<int> out(w * h, -1);
  REQUIRE_OK(launch("grid2d", {4, 3, 1}, {8, 4, 1}, Params().add(out.data()).add(w)));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) REQUIRE(out[y * w + x] == y * 1000 + x);
}

TEST_CASE("extern __shared__ dynamic shared memory") {
  const int n = 100;
  std::vector<int> in(n), out(n, 0);
  for (int i = 0; i < n; ++i) in[i] = i * i;
  REQUIRE_OK(launch("dynamic_shared_reverse", {1, 1, 1}, {n, 1, 1}, Params().add(in.data()).add(out.data()).add(n), {}, n * sizeof(int)));
  for (int i = 0; i < n; ++i) REQUIRE(out[i] == in[n - 1 - i]);
}

TEST_CASE("__device__ variable and __constant__ array through symbol_address") {
  int counter = 5;
  float coeffs[4] = {1.0f, 2.0f, 0.5f, -0.25f};
  Environment env;
  env.symbol_address = [&](std::string_view name) -> uint64_t {
    if (name == "g_counter") return (uint64_t)&counter;
    if (name == "c_coeffs") return (uint64_t)coeffs;
    return 0;
  };
  std::vector<float> x(40), y(40, 0);
  for (int i = 0; i < 40; ++i) x[i] = fl(i) * 0.1f;
  REQUIRE_OK(launch("globals_and_constants", {1, 1, 1}, {40, 1, 1}, Params().add(x.data()).add(y.data()), env));
  CHECK(counter == 45);
  for (int i = 0; i < 40; ++i) {
    float v = x[i];
    REQUIRE(y[i] == Approx(coeffs[0] + v * (coeffs[1] + v * (coeffs[2] + v * coeffs[3]))));
  }
  Result r = launch("globals_and_constants", {1, 1, 1}, {40, 1, 1}, Params().add(x.data()).add(y.data()));
  CHECK(r.outcome == Outcome::kUnsupported);
  CHECK(r.message.find("g_counter") != std::string::npos);
}

TEST_CASE("device printf") {
  std::vector<std::string> printed;
  Environment env;
  env.print = [&](std::string_view s) { printed.emplace_back(s); };
  REQUIRE_OK(launch("print_kernel", {1, 1, 1}, {3, 1, 1}, Params().add(10), env));
  REQUIRE(printed == std::vector<std::string>{"thread 10 value 0.000000 name vgpu\n", "thread 11 value 1.500000 name vgpu\n",
                                              "thread 12 value 3.000000 name vgpu\n"});
}

TEST_CASE("failed assert traps with the expression") {
  std::vector<int> v = {0, 1, 2, 5};
  Result r = launch("assert_kernel", {1, 1, 1}, {4, 1, 1}, Params().add(v.data()));
  REQUIRE(r.outcome == Outcome::kTrap);
  CHECK(r.message.find("v[threadIdx.x] < 3") != std::string::npos);
  CHECK(r.message.find("kernels.cu") != std::string::npos);
  CHECK(r.message.find("thread [3,0,0]") != std::string::npos);
  CHECK(r.message.find("assert_kernel") != std::string::npos);
  std::vector<int> ok = {0, 1, 2, 2};
  REQUIRE_OK(launch("assert_kernel", {1, 1, 1}, {4, 1, 1}, Params().add(ok.data())));
}

TEST_CASE("unsupported instruction is refused before running") {
  std::vector<unsigned> out(32, 0xAB);
  Result r = launch("envreg_kernel", {1, 1, 1}, {1, 1, 1}, Params().add(out.data()));
  REQUIRE(r.outcome == Outcome::kUnsupported);
  CHECK(r.message.find("envreg0") != std::string::npos);
  CHECK(out[0] == 0xAB);
}

TEST_CASE("a load or store through a null pointer is an illegal address, named with its instruction") {
  std::vector<float> b(64, 1.0f), c(64, -1.0f);
  // vector_add(a, b, c, n) with a null: its first load faults, at a small address past null.
  const Result r = launch("vector_add", {1, 1, 1}, {64, 1, 1},
                          Params().add(static_cast<float*>(nullptr)).add(b.data()).add(c.data()).add(64));
  CHECK(r.outcome == Outcome::kIllegalAddress);
  CHECK_THAT(r.message, Catch::Contains("illegal address") && Catch::Contains("ld.global"));
}

TEST_CASE("nanosleep is a hint: it returns at once") {
  // CUB's decoupled look-back scan backs off with it while it waits for an earlier block, which
  // this interpreter has always finished (blocks run in order).
  int out = 0;
  REQUIRE_OK(launch("nanosleep_kernel", {1, 1, 1}, {1, 1, 1}, Params().add(&out)));
  CHECK(out == 1);
}

TEST_CASE("bad launches") {
  CHECK(launch("no_such_kernel", {1, 1, 1}, {1, 1, 1}, Params()).outcome == Outcome::kBadLaunch);
  CHECK(launch("vector_add", {1, 1, 1}, {2048, 1, 1}, Params()).outcome == Outcome::kBadLaunch);
  CHECK(launch("vector_add", {1, 1, 1}, {32, 1, 1}, Params().add(1)).outcome == Outcome::kBadLaunch);  // too few param bytes
  CHECK(has_entry(program(), "vector_add"));
  CHECK_FALSE(has_entry(program(), "_Z13collatz_stepsji"));
}

TEST_CASE("malformed PTX fails to parse with a message") {
  const char* bad[] = {
      ".version 9.0\n.target sm_75\n.address_size 64\n.visible .entry k() {\n bra $L_missing;\n}\n",
      ".version 9.0\n.visible .entry k(.param .u64 p) {\n .reg .b32 %r<2>;\n mov.u32 %r5, 1;\n ret;\n}\n",
      ".visible .entry k( {",
      "garbage \x01 text",
      ".global .align 4 .b8 x[99999999999999999999];",
      ".visible .entry k() {\n .reg .b32 %r<4>;\n add.s32 %r1, %r2, ;\n}\n",
      "",
      ".entry",
      ".func (.param .b32 r) f(.param .b32 a) { .reg .b32 %r<1>; ld.param.b32 %r0, [a]; st.param.b32 [r], %r0; ret; }\n"
      ".entry k() { .param .b32 p; .param .b32 q; call.uni (q), g, (p); ret; }\n",
  };
  for (const char* text : bad) {
    std::string why;
    auto p = parse(text, &why);
    INFO(text);
    if (std::string_view(text).empty()) continue;  // an empty module is valid
    CHECK(p == nullptr);
    CHECK(!why.empty());
  }
  // Deeply nested braces (a hostile guest's PTX) fail without deep recursion.
  {
    std::string nested = ".visible .entry k() {\n .reg .b32 %r<2>;\n mov.b32 %r1, ";
    nested += std::string(1 << 20, '{');
    std::string why;
    CHECK(parse(nested, &why) == nullptr);
    CHECK_THAT(why, Catch::Contains("vector element"));
    why.clear();
    CHECK(parse(".visible .entry k() {\n .reg .b64 %rd<2>;\n ld.u32 %rd1, [%rd0, {%rd1}];\n}\n", &why) == nullptr);
    CHECK_THAT(why, Catch::Contains("coordinates in a memory operand of ld.u32"));
  }
  // Random truncations of the real module never crash.
  std::ifstream f(VGPU_TEST_PTX);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  for (size_t cut = 7; cut < text.size(); cut += text.size() / 37) {
    std::string why;
    (void)parse(std::string_view(text).substr(0, cut), &why);
  }
}

TEST_CASE("recursion is bounded by the call depth limit") {
  const char* text =
      ".version 9.0\n.target sm_75\n.address_size 64\n"
      ".func f() { call.uni f, (); ret; }\n"
      ".visible .entry k() { call.uni f, (); ret; }\n";
  std::string why;
  auto p = parse(text, &why);
  INFO(why);
  REQUIRE(p);
  Launch l{{1, 1, 1}, {1, 1, 1}, 0, nullptr, 0};
  Result r = run(*p, "k", l, {});
  CHECK(r.outcome == Outcome::kTrap);
}

TEST_CASE("shared atomics, generic pointers to shared and local, bit and half operations") {
  const int n = 64;
  std::vector<unsigned> in(n);
  for (int i = 0; i < n; ++i) in[i] = 1000u * i * i + 3u * i + 1u;
  in[5] = 12345u;
  std::vector<unsigned long long> out(n * 12, 0);
  REQUIRE_OK(launch("misc_ops", {1, 1, 1}, {n, 1, 1}, Params().add(in.data()).add(out.data())));
  for (unsigned t = 0; t < (unsigned)n; ++t) {
    unsigned x = in[t];
    const unsigned long long* o = &out[t * 12];
    INFO("t=" << t);
    unsigned long long bytes = x | ((unsigned long long)t << 32), perm = 0;
    const unsigned sel[4] = {0, 4, 1, 5};
    for (int i = 0; i < 4; ++i) perm |= ((bytes >> (8 * sel[i])) & 0xff) << (8 * i);
    CHECK(o[0] == perm);
    CHECK(o[1] == (unsigned long long)(x ? __builtin_ctz(x) + 1 : 0));
    CHECK(o[2] == ((x >> 4) & 0xff));
    CHECK(o[3] == ((x & ~0xf00u) | ((t & 0xf) << 8)));
    CHECK(o[4] == (unsigned long long)(float)(_Float16)(static_cast<float>(x) * 0.001f));
    CHECK(o[5] == (t < 32 ? 1u : 0u));
    CHECK(o[6] == (unsigned)(((((unsigned long long)t << 32) | x) << 5) >> 32));
    CHECK(o[7] == static_cast<unsigned long long>((static_cast<u128>(0x123456789abcdefull * x) * 0xfedcba987654321ull) >> 64));
    unsigned long long v = (unsigned long long)x << 7, rev = 0;
    for (int k = 0; k < 64; ++k) rev |= ((v >> k) & 1ull) << (63 - k);
    CHECK(o[8] == (rev ^ (unsigned long long)__builtin_popcountll(x * 0x100000001ull)));
    CHECK(o[9] == ((t & 1) ? 700u : 7u));
    CHECK(o[10] == x);
    CHECK(o[11] == (unsigned long long)(n * (n - 1) / 2));
  }
}

TEST_CASE("threads that exit before a barrier do not block it") {
  std::vector<int> out(64, -1);
  REQUIRE_OK(launch("early_exit_barrier", {2, 1, 1}, {64, 1, 1}, Params().add(out.data())));
  for (int i = 0; i < 64; ++i) REQUIRE(out[i] == (i < 16 ? -1 : i * 2));
}

TEST_CASE("printf conversions with flags, width, precision and lengths") {
  std::vector<std::string> printed;
  Environment env;
  env.print = [&](std::string_view s) { printed.emplace_back(s); };
  long long big = -1234567890123ll;
  double d = 3.14159;
  REQUIRE_OK(launch("print_formats", {1, 1, 1}, {1, 1, 1}, Params().add(big).add(d), env));
  char want[256];
  snprintf(want, sizeof want, "[%5d|%-4x|%c|%08.3f|%e|%g|%lld|%llx|%u|%s|%%]\n", -42, 255u, 'Z', d, d, d, big, big, 4000000000u, "ok");
  REQUIRE(printed.size() == 1);
  CHECK(printed[0] == want);
}

TEST_CASE("lop3 from inline asm") {
  std::vector<unsigned> in = {0xf0f0f0f0u, 0xcccccccc, 0xaaaaaaaa}, out(2, 0);
  REQUIRE_OK(launch("lop3_kernel", {1, 1, 1}, {1, 1, 1}, Params().add(in.data()).add(out.data())));
  CHECK(out[0] == (in[0] ^ in[1] ^ in[2]));
  CHECK(out[1] == ((in[0] & in[1]) | (in[0] & in[2]) | (in[1] & in[2])));
}

TEST_CASE("unimplemented special registers are refused by name") {
  unsigned out[32] = {};
  Result r = launch("envreg_kernel", {1, 1, 1}, {1, 1, 1}, Params().add(out));
  CHECK(r.outcome == Outcome::kUnsupported);
  CHECK(r.message.find("%envreg0") != std::string::npos);
}

TEST_CASE("initialized module variables holding addresses of other variables") {
  std::vector<std::string> printed;
  Environment env;
  env.print = [&](std::string_view s) { printed.emplace_back(s); };
  std::vector<int> out(4, 0);
  REQUIRE_OK(launch("initialized_globals", {1, 1, 1}, {4, 1, 1}, Params().add(out.data()), env));
  CHECK(printed == std::vector<std::string>{"alpha=10\n", "beta=20\n", "alpha=30\n", "beta=10\n"});
  CHECK(out == std::vector<int>{10 + 'a', 20 + 'b', 30 + 'a', 10 + 'b'});
}

TEST_CASE("__syncthreads_count, _and and _or") {
  std::vector<int> in(64), out(3, -1);
  for (int i = 0; i < 64; ++i) in[i] = i - 10;
  REQUIRE_OK(launch("syncthreads_count", {1, 1, 1}, {64, 1, 1}, Params().add(in.data()).add(out.data())));
  CHECK(out == std::vector<int>{53, 0, 0});
  for (int i = 0; i < 64; ++i) in[i] = i * 3;
  REQUIRE_OK(launch("syncthreads_count", {1, 1, 1}, {64, 1, 1}, Params().add(in.data()).add(out.data())));
  CHECK(out == std::vector<int>{63, 1, 1});
}

TEST_CASE("registers declared in a nested block shadow the outer ones only inside it") {
  const char* text =
      ".version 9.0\n.target sm_75\n.address_size 64\n"
      ".visible .entry k(.param .u64 out) {\n"
      " .reg .b32 %r<3>;\n .reg .b64 %rd<2>;\n"
      " mov.u32 %r1, 5;\n"
      " { .reg .b32 %r1; mov.u32 %r1, 7; mov.u32 %r2, %r1; }\n"
      " add.u32 %r2, %r2, %r1;\n"  // 7 + 5
      " ld.param.u64 %rd1, [out];\n st.u32 [%rd1], %r2;\n ret;\n}\n";
  std::string why;
  auto p = parse(text, &why);
  INFO(why);
  REQUIRE(p);
  uint32_t result = 0;
  uint32_t* ptr = &result;
  Launch l{{1, 1, 1}, {1, 1, 1}, 0, &ptr, sizeof ptr};
  Result r = run(*p, "k", l, {});
  INFO(r.message);
  REQUIRE(r.outcome == Outcome::kOk);
  CHECK(result == 12);
}

TEST_CASE("a register read before any write is zero in every thread, after threads that wrote it") {
  // Only the first CTA's threads write %r2 and %r3; the second CTA's (on the same host thread's
  // registers) read them unwritten, and a loop's counter is read before its first write.
  const char* text =
      ".version 9.0\n.target sm_75\n.address_size 64\n"
      ".visible .entry k(.param .u64 out) {\n"
      " .reg .b32 %r<8>;\n .reg .b64 %rd<4>;\n .reg .pred %p<3>;\n"
      " mov.u32 %r1, %ctaid.x;\n setp.eq.u32 %p1, %r1, 0;\n"
      " @%p1 mov.u32 %r2, 7;\n @!%p1 bra $L_read;\n mov.u32 %r3, 9;\n"
      "$L_read:\n add.u32 %r4, %r2, %r3;\n"
      "$L_loop:\n add.u32 %r5, %r5, 1;\n setp.lt.u32 %p2, %r5, 3;\n @%p2 bra $L_loop;\n"
      " add.u32 %r4, %r4, %r5;\n"
      " mov.u32 %r6, %tid.x;\n shl.b32 %r7, %r1, 2;\n add.u32 %r6, %r6, %r7;\n"
      " ld.param.u64 %rd1, [out];\n mul.wide.u32 %rd2, %r6, 4;\n add.s64 %rd1, %rd1, %rd2;\n"
      " st.u32 [%rd1], %r4;\n ret;\n}\n";
  std::string why;
  auto p = parse(text, &why);
  INFO(why);
  REQUIRE(p);
  std::vector<uint32_t> out(8, 0);
  uint32_t* ptr = out.data();
  Launch l{{2, 1, 1}, {4, 1, 1}, 0, &ptr, sizeof ptr};
  REQUIRE_OK(run(*p, "k", l, {}));
  CHECK(out == std::vector<uint32_t>{19, 19, 19, 19, 3, 3, 3, 3});  // 7 + 9 + 3, then 0 + 0 + 3
}

namespace {

uint32_t bits_of(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

// A texture unit whose answers encode the question: texture 11 returns x*100 + y*10 + z, the
// layer + 0.5, the level of detail and -1; texture 12 (linear) returns index, -index, 300,
// -300; surface 21 is 3 layers of 4 rows of 8 ints, each z*100 + y*10 + x at first.
struct TestTextureUnit {
  int32_t surface[3][4][8];
  Environment env;
  TestTextureUnit() {
    for (int z = 0; z < 3; ++z)
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 8; ++x) surface[z][y][x] = z * 100 + y * 10 + x;
    env.texture_read = [](uint64_t h, const float c[3], int layer, float lod, uint32_t out[4]) {
      if (h != 11) return false;
      out[0] = bits_of(c[0] * 100 + c[1] * 10 + c[2]);
      out[1] = bits_of(static_cast<float>(layer) + 0.5f);
      out[2] = bits_of(lod);
      out[3] = bits_of(-1.0f);
      return true;
    };
    env.texture_fetch = [](uint64_t h, int64_t index, uint32_t out[4]) {
      if (h != 12) return false;
      const int32_t v[4] = {static_cast<int32_t>(index), -static_cast<int32_t>(index), 300, -300};
      memcpy(out, v, sizeof v);
      return true;
    };
    env.surface_access = [this](uint64_t h, int64_t x, int64_t y, int64_t z, void* data, size_t size, int boundary,
                                bool write) {
      if (h != 21) return false;
      if (x < 0 || x + static_cast<int64_t>(size) > 32 || y < 0 || y >= 4 || z < 0 || z >= 3) {
        if (boundary != 0) return false;  // this unit traps what it does not zero
        if (!write) memset(data, 0, size);
        return true;
      }
      auto* at = reinterpret_cast<uint8_t*>(&surface[z][y][0]) + x;
      if (write) memcpy(at, data, size);
      else memcpy(data, at, size);
      return true;
    };
  }
};

}  // namespace

TEST_CASE("texture objects: every geometry, levels of detail, tex1Dfetch and integer results") {
  TestTextureUnit unit;
  std::vector<float> f(11, -7);
  std::vector<int> i(6, -7);
  REQUIRE_OK(launch("texture_reads", {1, 1, 1}, {1, 1, 1},
                    Params().add(uint64_t{11}).add(uint64_t{12}).add(f.data()).add(i.data()), unit.env));
  CHECK(f[0] == 950);    // tex1D
  CHECK(f[1] == 175);    // tex2D
  CHECK(f[2] == 123);    // tex3D
  CHECK(f[3] == 456);    // texCubemap: the direction
  CHECK(f[4] == 52.5f);  // tex2DLayered: x, y ...
  CHECK(f[5] == 3.5f);   // ... layer 3
  CHECK(f[6] == 0);      // no level of detail
  CHECK(f[7] == -1);
  CHECK(f[8] == 700);    // tex1DLayered
  CHECK(f[9] == 120);    // tex2DLod ...
  CHECK(f[10] == 1.5f);  // ... at level 1.5
  CHECK(i[0] == 7);      // tex1Dfetch<int>
  CHECK(i[1] == 2);      // tex1Dfetch<char4>: each lane narrowed
  CHECK(i[2] == -2);
  CHECK(i[3] == 44);
  CHECK(i[4] == -44);
  CHECK(static_cast<uint32_t>(i[5]) == bits_of(0.5f));  // tex2D<uint2>: lanes as they came

  SECTION("an object the unit does not know traps") {
    Result r = launch("texture_reads", {1, 1, 1}, {1, 1, 1},
                      Params().add(uint64_t{99}).add(uint64_t{12}).add(f.data()).add(i.data()), unit.env);
    CHECK(r.outcome == Outcome::kTrap);
    CHECK_THAT(r.message, Catch::Contains("not one of this context's textures"));
  }
  SECTION("without a texture unit the kernel is refused by name before it runs") {
    std::fill(f.begin(), f.end(), -7.0f);
    Result r = launch("texture_reads", {1, 1, 1}, {1, 1, 1},
                      Params().add(uint64_t{11}).add(uint64_t{12}).add(f.data()).add(i.data()));
    CHECK(r.outcome == Outcome::kUnsupported);
    CHECK_THAT(r.message, Catch::Contains("tex.1d.v4.f32.f32") && Catch::Contains("no texture unit"));
    CHECK(f[0] == -7);
  }
}

TEST_CASE("CTAs on several host threads use the texture unit at the same time") {
  // The first fetch waits for a second to arrive while it is still inside the unit. Another
  // host thread's CTA can only come in if fetches are not taken one at a time (they were,
  // behind the printf and heap lock); a unit called one at a time gives up after 20 s.
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0;
  bool overlapped = false;
  std::atomic<bool> first{true};
  std::atomic<int> calls{0};
  Environment env;
  env.texture_read = [](uint64_t, const float*, int, float, uint32_t*) { return false; };
  env.texture_fetch = [&](uint64_t h, int64_t index, uint32_t out[4]) {
    if (h != 12) return false;
    calls++;
    {
      std::unique_lock lock(mu);
      ++inside;
      if (inside >= 2) overlapped = true;
      cv.notify_all();
      if (first.exchange(false))
        cv.wait_for(lock, std::chrono::seconds(20), [&] { return overlapped; });
      --inside;
    }
    const int32_t v[4] = {static_cast<int32_t>(index) * 3, 0, 0, 0};
    memcpy(out, v, sizeof v);
    return true;
  };
  constexpr uint32_t kBlocks = 256, kThreads = 32;  // large enough to be run on several threads
  std::vector<int> out(kBlocks * kThreads, -1);
  const Params params = Params().add(uint64_t{12}).add(out.data());
  Launch l{{kBlocks, 1, 1}, {kThreads, 1, 1}, 0, params.bytes.data(), params.bytes.size()};
  l.host_threads = 4;
  REQUIRE_OK(run(program(), "texture_fetch_grid", l, env));
  CHECK(overlapped);
  CHECK(calls == static_cast<int>(kBlocks * kThreads));
  for (uint32_t i = 0; i < kBlocks * kThreads; ++i) {
    INFO(i);
    REQUIRE(out[i] == static_cast<int>(i) * 3);
  }
}

TEST_CASE("surface objects: reads, writes, vectors, layers and boundary modes") {
  TestTextureUnit unit;
  std::vector<int> out(5, 0);
  REQUIRE_OK(launch("surface_rw", {1, 1, 1}, {1, 1, 1}, Params().add(uint64_t{21}).add(out.data()), unit.env));
  CHECK(out[0] == 32);             // byte 8 of row 3: element 2
  CHECK(unit.surface[0][3][3] == 33);  // written at byte 12
  CHECK(out[1] == 0);              // outside, zero mode
  CHECK(out[2] == 1);              // short2 at byte 4: element 1's two halves
  CHECK(out[3] == 0);
  CHECK(unit.surface[2][1][0] == 5);  // int2 into layer 2, row 1
  CHECK(unit.surface[2][1][1] == 6);
  CHECK(unit.surface[1][1][0] == 110);  // other layers untouched

  out[4] = 1;  // now also read outside in trap mode
  Result r = launch("surface_rw", {1, 1, 1}, {1, 1, 1}, Params().add(uint64_t{21}).add(out.data()), unit.env);
  CHECK(r.outcome == Outcome::kTrap);
  CHECK_THAT(r.message, Catch::Contains("surface read outside the surface"));
}

TEST_CASE("__syncwarp: a lane reads what the warp's other lanes stored before it") {
  std::vector<int> out(64, -1);
  REQUIRE_OK(launch("syncwarp_exchange", {1, 1, 1}, {64, 1, 1}, Params().add(out.data())));
  for (int i = 0; i < 64; ++i) REQUIRE(out[i] == (i ^ 31) * 3);
}
