// What a CUDA class uses beyond the basics (issue 21's areas), each in a
// program of tests/programs built both ways nvcc builds: with the shared
// runtime and with its default static one. Each must pass, and must not
// meet a call vgpu refuses.
#include <catch2/catch.hpp>

#include "harness.h"
#include "require_pass.h"

using namespace vgpu::test;

namespace {

void run_both_ways(Daemon& d, const std::string& name) {
  for (const std::string& path : {name, "static/" + name}) {
    const RunResult r = d.run("alice", path);
    require_pass(r, name);
    CHECK_THAT(r.output, !Catch::Contains("not supported by vgpu"));
  }
}

}  // namespace

TEST_CASE("managed memory: the tutorial, CPU writes between launches, copies, prefetch, advice") {
  Daemon d;
  run_both_ways(d, "managed_memory");
}

TEST_CASE("pitched and 3D copies, host functions, stream-ordered allocation, limits, occupancy") {
  Daemon d;
  run_both_ways(d, "runtime_features");
}
