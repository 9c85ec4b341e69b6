// Dynamic parallelism on the interpreter: kernels_cdp.cu, compiled with -rdc=true, launches
// kernels from the device through cudadevrt's calls, which the interpreter answers.
#include "ptx_test_support.h"

namespace vgpu::executor::sim::ptx::test {
namespace {

const Program& program_cdp() {
  static std::unique_ptr<Program> p = parse_file(VGPU_TEST_PTX_CDP);
  return *p;
}

Result launch_cdp(const char* entry, uint32_t blocks, uint32_t threads, const Params& params, unsigned host_threads = 1) {
  Launch l{{blocks, 1, 1}, {threads, 1, 1}, 0, params.bytes.data(), params.bytes.size()};
  l.host_threads = host_threads;
  return run(program_cdp(), entry, l, {});
}

TEST_CASE("dynamic parallelism: each block's child grid fills its slice") {
  for (unsigned host_threads : {1u, 4u}) {
    INFO("host threads " << host_threads);
    constexpr int blocks = 160;  // past the size that runs blocks on several host threads
    std::vector<int> out(blocks * 32, -1);
    REQUIRE_OK(launch_cdp("cdp_parent", blocks, 64, Params().add(out.data()), host_threads));
    for (int b = 0; b < blocks; ++b)
      for (int i = 0; i < 32; ++i) REQUIRE(out[b * 32 + i] == 1000 * b + i);
  }
}

TEST_CASE("dynamic parallelism: grids launched by launched grids, to CUDA's nesting limit") {
  int count = 0, lowest = 1000;
  REQUIRE_OK(launch_cdp("cdp_tree", 1, 2, Params().add(3).add(2).add(&count).add(&lowest)));
  CHECK(count == 2 + 4 + 8 + 16);  // 2 threads launched by the host, then 1, 2, 4 grids of 4
  CHECK(lowest == 0);

  // A chain of one-block grids: one 24 levels below the host's is the last, its launch fails.
  count = 0;
  lowest = 1000;
  REQUIRE_OK(launch_cdp("cdp_tree", 1, 1, Params().add(30).add(1).add(&count).add(&lowest)));
  CHECK(lowest == 30 - 24);
  CHECK(count == 1 + 24 * 2);
}

TEST_CASE("dynamic parallelism: a refused child launch is the parent's error; device streams work") {
  std::vector<int> out(8, -1);
  std::vector<int> errors(5, -1);
  REQUIRE_OK(launch_cdp("cdp_errors", 1, 1, Params().add(out.data()).add(errors.data())));
  CHECK(errors[0] == 9);  // cudaErrorInvalidConfiguration
  CHECK(errors[1] == 0);  // read once, then cleared
  CHECK(errors[2] == 0);
  CHECK(errors[3] == 0);
  CHECK(errors[4] == 0);
  CHECK(out[0] == 7);
  CHECK(out[3] == 10);
  CHECK(out[4] == -1);  // the 2048-thread child never ran
}

TEST_CASE("dynamic parallelism: launches past the pending bound are refused, each to its own thread") {
  int ran = 0, refused = 0, other = 0;
  constexpr int kBlocks = 160, kThreads = 512;  // 81,920 launches; 65,536 may be pending
  REQUIRE_OK(launch_cdp("cdp_flood", kBlocks, kThreads, Params().add(&ran).add(&refused).add(&other), 2));
  CHECK(ran == 65536);
  CHECK(refused == kBlocks * kThreads - 65536);
  CHECK(other == 0);
}

TEST_CASE("dynamic parallelism: device-side copies and memsets run in order with the launches") {
  std::vector<int> a(8, -1), b(8, -1), c(8, -1), errors(3, -1);
  REQUIRE_OK(launch_cdp("cdp_copies", 1, 1, Params().add(a.data()).add(b.data()).add(c.data()).add(errors.data())));
  CHECK(errors[0] == 0);
  CHECK(errors[1] == 0);
  CHECK(errors[2] == 1);  // cudaErrorInvalidValue: a null destination
  for (int i = 0; i < 8; ++i) {
    CHECK(b[i] == 100 + i);
    CHECK(c[i] == 0x7f7f7f7f);
  }
}

TEST_CASE("dynamic parallelism: a child's trap fails the host's launch, naming the child") {
  const Result r = launch_cdp("cdp_trap_parent", 1, 1, Params());
  CHECK(r.outcome == Outcome::kTrap);
  CHECK_THAT(r.message, Catch::Contains("cdp_trap_child"));
}

}  // namespace
}  // namespace vgpu::executor::sim::ptx::test

namespace vgpu::executor::sim::ptx::test {
namespace {

// Two objects of a -rdc=true program, as fatbin::ptx_text joins them (a NUL between).
TEST_CASE("separate compilation: objects link by name, a .weak function two define is the first's") {
  const std::string head = ".version 8.0\n.target sm_75\n.address_size 64\n";
  const std::string first = head +
      ".extern .func (.param .b32 r) add_one(.param .b32 x);\n"
      ".weak .func (.param .b32 r) twice(.param .b32 x) {\n .reg .b32 %r<3>;\n"
      " ld.param.b32 %r1, [x];\n add.s32 %r2, %r1, %r1;\n st.param.b32 [r], %r2;\n ret;\n}\n"
      ".visible .entry k(.param .u64 out) {\n .reg .b32 %r<4>;\n .reg .b64 %rd<2>;\n"
      " ld.param.u64 %rd1, [out];\n"
      " { .param .b32 a; st.param.b32 [a], 20; .param .b32 b;\n"
      "   call.uni (b), add_one, (a); ld.param.b32 %r1, [b]; }\n"
      " { .param .b32 a; st.param.b32 [a], %r1; .param .b32 b;\n"
      "   call.uni (b), twice, (a); ld.param.b32 %r2, [b]; }\n"
      " st.global.u32 [%rd1], %r2;\n ret;\n}\n";
  const std::string second = head +
      ".visible .func (.param .b32 r) add_one(.param .b32 x) {\n .reg .b32 %r<3>;\n"
      " ld.param.b32 %r1, [x];\n add.s32 %r2, %r1, 1;\n st.param.b32 [r], %r2;\n ret;\n}\n"
      ".weak .func (.param .b32 r) twice(.param .b32 x) {\n .reg .b32 %r<3>;\n"
      " ld.param.b32 %r1, [x];\n add.s32 %r2, %r1, %r1;\n st.param.b32 [r], %r2;\n ret;\n}\n";
  std::string why;
  const std::string linked = first + std::string(1, '\0') + second;
  auto p = parse(linked, &why);
  INFO(why);
  REQUIRE(p);
  uint32_t out = 0;
  Params params = Params().add(&out);
  Launch l{{1, 1, 1}, {1, 1, 1}, 0, params.bytes.data(), params.bytes.size()};
  REQUIRE_OK(run(*p, "k", l, {}));
  CHECK(out == 42);  // (20 + 1) * 2, add_one from the second object

  // Alone, the first object calls a function nothing defines: refused by name.
  auto alone = parse(first, &why);
  REQUIRE(alone);
  const Result r = run(*alone, "k", l, {});
  CHECK(r.outcome == Outcome::kUnsupported);
  CHECK_THAT(r.message, Catch::Contains("add_one"));

  // One object defining a function twice is still an error.
  CHECK(parse(second + second.substr(head.size()), &why) == nullptr);
}

}  // namespace
}  // namespace vgpu::executor::sim::ptx::test
