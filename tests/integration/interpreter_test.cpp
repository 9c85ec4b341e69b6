// Kernels no sim plug-in implements: the sim backend runs them from the PTX
// nvcc put in the program (executor/src/sim/ptx/), so a student's program
// computes its real results without a GPU; what the interpreter cannot run
// is refused by name on the program's stderr. vgpud here loads no plug-in.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "harness.h"
#include "require_pass.h"

using namespace vgpu::test;

namespace {
// The interpreter is some thousand times slower than a GPU: the watchdog
// must not end a program's largest kernel on a loaded machine.
const std::vector<std::string> kSlowWatchdog = {"--watchdog-s", "120"};
}  // namespace

TEST_CASE("with no plug-in, programs' kernels run from their PTX and compute the right results") {
  Daemon d(kSlowWatchdog, Plugins::kNone);
  for (const std::string path :
       {"class_kernels", "static/class_kernels", "thrust_algorithms", "vector_add", "saxpy", "constant_memory",
        "struct_param", "streams_events", "static/constant_memory",
        // Cooperative groups' grid.sync() over the largest resident grid.
        "cooperative", "static/cooperative"}) {
    SECTION(path) {
      const std::string name = path.substr(path.find('/') + 1);
      require_pass(d.run("alice", path), name);
    }
  }
  CHECK_THAT(d.log(), !Catch::Contains("no CPU implementation"));
}

TEST_CASE("CUB tunes itself for the PTX the interpreter runs, not for a cubin it cannot") {
  Daemon d(kSlowWatchdog, Plugins::kNone);
  // sm_90 cubin + compute_75 PTX: reporting ptxVersion 90 (the cubin a GPU
  // would run) made CUB launch its sm_90 tuning on compute_75 code, and the
  // scan came out wrong from element 63360 on.
  require_pass(d.run("alice", "thrust_mixed_archs"), "thrust_algorithms");
}

TEST_CASE("cuda::barrier and cuda::pipeline built for Hopper run on the interpreter") {
  Daemon d(kSlowWatchdog, Plugins::kNone);
  const RunResult r = d.run("alice", "async_copies");
  require_pass(r, "async_copies");
  CHECK_THAT(r.output, Catch::Contains("ok   cuda::barrier: a tile copied with memcpy_async"));
  CHECK_THAT(r.output, Catch::Contains("ok   cuda::memcpy_async of a float4 a thread on a cuda::barrier"));
  CHECK_THAT(r.output, Catch::Contains("ok   cuda::pipeline: 8 stages"));
}

TEST_CASE("interpreted kernels print to the program's stdout and fail asserts as CUDA does") {
  Daemon d(kSlowWatchdog, Plugins::kNone);
  const RunResult p = d.run("alice", "printf_program");
  require_pass(p, "printf_program");
  CHECK_THAT(p.output, Catch::Contains("kernel hello: block 1 thread 1 tag 7\n"));
  CHECK_THAT(p.output, Catch::Contains("kernel count 20 of 1000\n"));
  CHECK_THAT(d.log(), !Catch::Contains("kernel hello"));

  const RunResult a = d.run("bob", "static/assert_program");
  require_pass(a, "assert_program");
  CHECK_THAT(a.output, Catch::Contains("Assertion `v[i] < 100` failed."));
  CHECK_THAT(a.output, Catch::Contains("assert_program.cu:12:"));
}

TEST_CASE("texture and surface objects are read and written by interpreted kernels") {
  Daemon d(kSlowWatchdog, Plugins::kNone);
  // Every geometry, filter, address mode, mip level and surface boundary the program checks.
  require_pass(d.run("alice", "textures"), "textures");
}

TEST_CASE("a kernel the interpreter cannot run fails by name; the daemon goes on") {
  Daemon d(kSlowWatchdog, Plugins::kNone);
  // Thread block clusters are not interpreted (a plug-in implements them).
  const RunResult t = d.run("alice", "clusters");
  if (on_sim()) {
    CHECK(t.exit_code != 0);
    CHECK_THAT(t.output, Catch::Contains("the sim backend's PTX interpreter cannot run it") &&
                             Catch::Contains("%cluster_ctarank"));
    CHECK_THAT(t.output, Catch::Contains("has no CPU implementation on this host's sim backend"));
  } else {
    require_pass(t, "clusters");
  }
  require_pass(d.run("bob", "saxpy"), "saxpy");
}
