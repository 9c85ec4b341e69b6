// What a CUDA class uses beyond the basics (issue 21's areas), each in a
// program of tests/programs built both ways nvcc builds: with the shared
// runtime and with its default static one. Each must pass, and must not
// meet a call vgpu refuses.
#include <chrono>
#include <string>
#include <vector>

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

TEST_CASE("threads: their own results at once; one waiting on its stream holds no other up") {
  Daemon d;
  run_both_ways(d, "threads");
}

TEST_CASE("many asynchronous copies queued without a synchronize: more answers than the ring holds") {
  Daemon d;
  run_both_ways(d, "many_copies");
}

TEST_CASE("thread block clusters: ranks and compiled-in shapes and distributed shared memory in streams and graphs") {
  Daemon d;
  run_both_ways(d, "clusters");
}

TEST_CASE("tensor cores through wmma: a half GEMM scaled over fragments, int8, bf16, tf32 and double tiles") {
  Daemon d;
  run_both_ways(d, "tensor_cores");
}

TEST_CASE("dynamic parallelism: child grids per block, a launch tree with printf, a recursive sum, device streams and errors") {
  Daemon d;
  run_both_ways(d, "dynamic_parallelism");
}

TEST_CASE("separate compilation: two objects' kernels call across them, share a variable and print") {
  Daemon d;
  run_both_ways(d, "separate_compilation");
}

TEST_CASE("CUB and thrust tune by the code the device runs: built for sm_75, planned on a newer GPU") {
  Daemon d;
  run_both_ways(d, "cub_tuning");
}

TEST_CASE("graphs: explicit, captured from two streams, updated, with memory nodes") {
  Daemon d;
  run_both_ways(d, "graphs");
}

TEST_CASE("the graph API around the nodes: enabling, generic parameters, attributes, events, clones, user objects") {
  Daemon d;
  run_both_ways(d, "graph_api");
}

TEST_CASE("conditional graph nodes: if, if/else, while, switch, nested, built by hand and by capture") {
  Daemon d;
  if (on_sim()) {
    run_both_ways(d, "graph_conditionals");
    return;
  }
  // A GPU's driver evaluates conditional handles of its own graphs only, and
  // the cuda backend runs a graph's nodes one by one: refused by name.
  for (const std::string path : {"graph_conditionals", "static/graph_conditionals"}) {
    const RunResult r = d.run("alice", path);
    INFO(r.output);
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.output, Catch::Contains("graph conditional nodes on this host's GPU backend"));
    CHECK_THAT(r.output, Catch::Contains("not supported by vgpu"));
  }
}

TEST_CASE("CUDA arrays, texture and surface objects: copies, every addressing and filter mode, mipmaps") {
  Daemon d;
  if (on_sim()) {
    run_both_ways(d, "textures");
    return;
  }
  // The cuda backend makes the driver's texture objects over linear and
  // pitched memory and 2D arrays; the rest is refused by name
  // (docs/compatibility.md).
  const RunResult r = d.run("alice", "textures");
  INFO(r.output);
  CHECK_THAT(r.output, Catch::Contains("ok   3D array: a 2x2x2 box"));
  CHECK_THAT(r.output, Catch::Contains("ok   bilinear: between four texels"));
  if (r.exit_code != 0) CHECK_THAT(r.output, Catch::Contains("not supported by vgpu"));
}

TEST_CASE("cooperative launch: a grid-wide reduction, the occupancy limit, the launch attribute") {
  Daemon d;
  run_both_ways(d, "cooperative");
}

TEST_CASE("kernel printf reaches the program's stdout at each synchronising call, and nowhere else") {
  Daemon d;
  for (const std::string path : {"printf_program", "static/printf_program"}) {
    SECTION(path) {
      // Another tenant runs beside it: none of the output may reach it.
      auto other = d.start("bob", "saxpy");
      const RunResult r = d.run("alice", path);
      const RunResult o = other->wait(std::chrono::seconds(120));
      require_pass(r, "printf_program");
      require_pass(o, "saxpy");
      // Each kernel's lines come after the host line before its synchronising
      // call and before the host line after it.
      const std::vector<std::string> in_order = {
          "host: before the first kernel",
          "kernel hello: block 0 thread 0 tag 7",
          "kernel hello: block 1 thread 1 tag 7",
          "host: after cudaDeviceSynchronize",
          "kernel hello: block 0 thread 0 tag 8",
          "host: after cudaStreamSynchronize",
          "kernel hello: block 0 thread 0 tag 9",
          "host: after a blocking cudaMemcpy",
          "kernel count 0 of 1000",
          "host: after the long kernel",
          "PASS printf_program",
          "kernel hello: block 0 thread 0 tag 10",  // printed at exit
      };
      size_t at = 0;
      for (const std::string& line : in_order) {
        const size_t found = r.output.find(line + "\n", at);
        INFO("looking for \"" << line << "\" after offset " << at << " in:\n" << r.output);
        REQUIRE(found != std::string::npos);
        at = found + line.size();
      }
      // The 4 KiB FIFO holds part of the long kernel's output, in whole lines.
      CHECK_THAT(r.output, Catch::Contains("kernel count 20 of 1000\n"));
      CHECK_THAT(r.output, !Catch::Contains("kernel count 999 of 1000"));
      CHECK_THAT(r.output, Catch::Contains("more than the printf FIFO holds"));
      CHECK_THAT(o.output, !Catch::Contains("kernel "));
      CHECK_THAT(d.log(), !Catch::Contains("kernel hello"));
    }
  }
}

TEST_CASE("a failed device assert: CUDA's message on the program's stderr, the context lost") {
  Daemon d;
  for (const std::string path : {"assert_program", "static/assert_program"}) {
    SECTION(path) {
      const RunResult r = d.run("alice", path);
      require_pass(r, "assert_program");
      // Threads 10..15 fail: blocks 1 (threads 2..7); block 0 has 0..7 (values < 100).
      CHECK_THAT(r.output, Catch::Contains("block: [1,0,0], thread: [2,0,0] Assertion `v[i] < 100` failed."));
      CHECK_THAT(r.output, Catch::Contains("block: [1,0,0], thread: [7,0,0] Assertion `v[i] < 100` failed."));
      CHECK_THAT(r.output, !Catch::Contains("block: [0,0,0]"));
      CHECK_THAT(r.output, Catch::Contains("assert_program.cu:12:"));
      CHECK_THAT(d.log(), !Catch::Contains("Assertion"));
      // The daemon goes on serving.
      require_pass(d.run("bob", "saxpy"), "saxpy");
    }
  }
}

