// The CUDA test programs, built by nvcc with the shared runtime, run end to
// end through vgpu-run, the intercept library, vgpud and the sim backend.
#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "harness.h"
#include "require_pass.h"

using namespace vgpu::test;
using namespace std::chrono_literals;

namespace {

// The number printed after `key` ("total=123" -> 123), 0 if none.
uint64_t number_after(const std::string& output, const std::string& key) {
  const size_t at = output.find(key);
  return at == std::string::npos ? 0 : std::strtoull(output.c_str() + at + key.size(), nullptr, 10);
}

}  // namespace

TEST_CASE("each test program passes as a simulated VM") {
  Daemon d;
  for (const char* name : {"saxpy", "vector_add", "device_query", "struct_param", "constant_memory",
                           "streams_events", "pinned_memory"}) {
    SECTION(name) { require_pass(d.run("alice", name), name); }
  }
}

TEST_CASE("error paths return the right CUDA errors and the program goes on") {
  Daemon d;
  // Under sim, also a kernel the plug-in does not implement.
  const RunResult r = d.run("alice", "error_paths", on_sim() ? std::vector<std::string>{"--sim"}
                                                              : std::vector<std::string>{});
  require_pass(r, "error_paths");
  CHECK_THAT(r.output, Catch::Contains("second cudaFree of the same pointer -> cudaErrorInvalidValue"));
  CHECK_THAT(r.output, Catch::Contains("into a 4096-byte allocation -> cudaErrorInvalidValue"));
  CHECK_THAT(r.output, Catch::Contains("cudaLaunchKernel(host_function) -> cudaErrorInvalid"));
  if (on_sim()) {
    CHECK_THAT(r.output, Catch::Contains("not_in_plugin under sim -> cudaError"));
    // The daemon names the kernel it has no implementation for.
    CHECK_THAT(d.log(), Catch::Contains("_Z13not_in_pluginPii"));
  }
}

TEST_CASE("a VM cannot read another VM's memory through its device pointer") {
  Daemon d;
  const std::string file = d.runtime_dir() + "/secret.txt";
  auto owner = d.start("alice", "cross_tenant", {"owner", file});
  for (int i = 0; i < 2000 && !std::filesystem::exists(file); ++i) std::this_thread::sleep_for(10ms);
  REQUIRE(std::filesystem::exists(file));
  const RunResult thief = d.run("bob", "cross_tenant", {"thief", file});
  std::filesystem::remove(file);
  const RunResult own = owner->wait(60s);
  require_pass(thief, "cross_tenant");
  CHECK_THAT(thief.output, Catch::Contains("no secret word observed"));
  require_pass(own, "cross_tenant");
  CHECK_THAT(own.output, Catch::Contains("secret intact"));
}

TEST_CASE("device memory one VM left behind is not readable by the next") {
  // The first exits without freeing 64 MiB of secret words; the second then
  // allocates as much and reads it all (on a GPU: tests/gpu/run.sh runs this
  // with --backend cuda).
  Daemon d;
  const RunResult left = d.run("alice", "cross_tenant", {"leave", "64"});
  require_pass(left, "cross_tenant");
  const RunResult found = d.run("bob", "cross_tenant", {"scavenge", "64"});
  require_pass(found, "cross_tenant");
  CHECK_THAT(found.output, Catch::Contains("no secret word in 64 MiB"));
}

TEST_CASE("several VMs run at once and all get correct results") {
  Daemon d;
  std::vector<std::unique_ptr<Process>> procs;
  const char* names[] = {"saxpy", "vector_add", "streams_events", "struct_param"};
  for (int vm = 0; vm < 8; ++vm) {
    procs.push_back(d.start("vm" + std::to_string(vm), names[vm % 4]));
  }
  for (int vm = 0; vm < 8; ++vm) require_pass(procs[vm]->wait(120s), names[vm % 4]);
}

TEST_CASE("a program that links the runtime statically runs; the runtime shim refuses it") {
  Daemon d;
  require_pass(d.run("alice", "static_runtime"), "static_runtime");
  const RunResult r = d.start_shim("alice", "static_runtime")->wait(std::chrono::seconds(60));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("without --runtime shim"));
  CHECK_THAT(r.output, !Catch::Contains("PASS"));
}

TEST_CASE("without a daemon, vgpu-run says so instead of hanging") {
  TempDir dir;
  Process p({vgpu_run_path(), "--runtime-dir", dir.path(), "--vm", "alice", "--",
             program_path("saxpy")},
            dir.path() + "/out.txt");
  const RunResult r = p.wait(30s);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("vgpud is not running"));
}

TEST_CASE("a daemon that dies mid-run gives its VMs a clear error, not a hang") {
  Daemon d;
  auto p = d.start("alice", "busy", {"2000", "3000"});  // 6 s of kernels
  REQUIRE(p->wait_for_output("launched", 60s));  // all queued; it waits for them now
  d.kill9();
  const RunResult r = p->wait(30s);
  INFO(r.output);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("lost the connection to vgpud"));
}

TEST_CASE("a VM process killed mid-run has its device state released") {
  Daemon d;
  auto p = d.start("alice", "busy", {"2000", "3000"});  // 6 s of kernels
  REQUIRE(p->wait_for_output("launched", 60s));  // memory, a module, kernels queued
  p->signal(SIGKILL);
  p->wait(10s);
  // The daemon notices the closed channel and releases everything.
  bool released = false;
  for (int i = 0; i < 500 && !released; ++i) {
    released = d.log().find("channel 1 closed, its device state released") != std::string::npos;
    std::this_thread::sleep_for(10ms);
  }
  CHECK(released);
  // And still serves others.
  require_pass(d.run("bob", "saxpy"), "saxpy");
}

TEST_CASE("vgpud stops cleanly on SIGTERM and records usage in its database") {
  Daemon d;
  require_pass(d.run("alice", "vector_add"), "vector_add");
  const RunResult r = d.stop();
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("SIGTERM received"));
  CHECK(std::filesystem::file_size(d.db_path()) > 0);
}

TEST_CASE("NVML in a VM sees one GPU with the memory CUDA reports") {
  // sim: a 3 GiB card, and no cap, so the VM sees all of it.
  Daemon d({"--sim-memory-gib", "3"});
  const RunResult nvml = d.run("alice", "nvml_query");
  require_pass(nvml, "nvml_query");
  CHECK_THAT(nvml.output, Catch::Contains("count=1 "));
  CHECK_THAT(nvml.output, Catch::Contains(" uuid=GPU-"));
  const RunResult cuda = d.run("alice", "alloc", {"1", "1"});
  require_pass(cuda, "alloc");
  const std::string mib = std::to_string(number_after(nvml.output, "total=") >> 20);
  CHECK_THAT(cuda.output, Catch::Contains("total_mib " + mib + "\n"));
  if (on_sim()) CHECK(number_after(nvml.output, "total=") == 3ull << 30);
}

TEST_CASE("a program with a bug its C library tolerates runs through vgpu-run as it runs natively") {
  // vgpu's libraries in the program may be built with AddressSanitizer (the
  // test build): its checks are for them, not for the program's allocator use.
  Daemon d;
  const RunResult r = d.run("alice", "allocator_mismatch");
  require_pass(r, "allocator_mismatch");
  CHECK_THAT(r.output, !Catch::Contains("AddressSanitizer"));
}

TEST_CASE("a runtime call vgpu does not forward fails cleanly with one log line") {
  Daemon d;
  const RunResult r = d.run("alice", "unsupported_call");
  require_pass(r, "unsupported_call");
  // NVIDIA's runtime asks the driver, which names the driver call it refuses.
  CHECK_THAT(r.output, Catch::Contains("vgpu: cuIpcGetMemHandle is not supported by vgpu"));
}

TEST_CASE("vgpud's threads carry names an operator can find in top -H or perf") {
  Daemon d;
  const std::string tasks = "/proc/" + std::to_string(d.pid()) + "/task";
  auto thread_names = [&] {
    std::set<std::string> names;
    for (const auto& t : std::filesystem::directory_iterator(tasks)) {
      std::ifstream comm(t.path() / "comm");
      std::string name;
      std::getline(comm, name);
      names.insert(name);
    }
    return names;
  };
  // The socket the harness waits for can appear before the last thread has
  // started and named itself.
  const std::set<std::string> wanted = {"vgpu-loop", "vgpu-dispatch", "vgpu-admin", "vgpu-ledger"};
  std::set<std::string> names;
  for (int i = 0; i < 250; ++i) {
    names = thread_names();
    if (std::includes(names.begin(), names.end(), wanted.begin(), wanted.end())) break;
    std::this_thread::sleep_for(20ms);
  }
  for (const std::string& name : wanted) {
    INFO("threads named: " << names.size());
    CHECK(names.count(name) == 1);
  }
}

TEST_CASE("NVML's utilization in a VM is its own tenant's share of the GPU") {
  Daemon d;
  // alice keeps the GPU busy with 2 ms kernels for about 6 s.
  auto busy = d.start("alice", "busy", {"2000", "3000"});
  REQUIRE(busy->wait_for_output("launched", 60s));
  const RunResult own = d.run("alice", "nvml_query", {"util", "5"});
  const RunResult other = d.run("bob", "nvml_query", {"util", "5"});
  require_pass(busy->wait(120s), "busy");
  require_pass(own, "nvml_query");
  require_pass(other, "nvml_query");
  INFO(own.output << other.output);
  // alice's own kernels had the GPU; bob, idle, sees none of that load.
  CHECK(number_after(own.output, "util_max=") >= 30);
  CHECK_THAT(other.output, Catch::Contains("util_max=0\n"));
}
