// A VM that loads module after module, each inflating to hundreds of MiB
// (issue 23, item 1): vgpud once decompressed and parsed them on its
// transport thread, which serves every VM's calls and beats the heartbeat
// guest modules watch; a few such loads in a row held every other VM up for
// seconds. Now slow calls run on their own threads, one per VM at a time,
// and loads over --module-limit-mib are refused before any work.
#include <cstdio>

#include <catch2/catch.hpp>

#include "robust_harness.h"

using namespace vgpu::test;
using namespace std::chrono_literals;

TEST_CASE("a VM loading modules that inflate to hundreds of MiB holds up no other VM",
          "[module_bomb]") {
  Daemon d;
  const std::string socket = d.runtime_dir() + "/vgpud.sock";
  // One VM times every call, from before the loads begin until after they end.
  auto steady_vm = start_test_vm("latency", {"--socket", socket, "--vm", "steady", "--seconds", "12"},
                                 d.runtime_dir() + "/steady.txt");
  REQUIRE(eventually([&] { return tenant_of(daemon_status(d.runtime_dir()), "steady").contains("vm"); },
                     60s));
  auto bomber = start_test_vm("bomb", {"--socket", socket, "--vm", "bomber", "--seconds", "6"},
                              d.runtime_dir() + "/bomb.txt");
  const RunResult bomb = bomber->wait(180s);
  const RunResult steady = steady_vm->wait(180s);
  INFO("steady:\n" << steady.output << "\nbomb:\n" << bomb.output);
  REQUIRE_THAT(steady.output, Catch::Contains("RESULT ok"));
  REQUIRE_THAT(bomb.output, Catch::Contains("RESULT ok"));  // every load answered, with an error
  const auto report = report_of(bomb.output);
  const CallLatency latency = latency_of(steady.output);
  std::printf("module bomb: %llu loads of %llu-byte fat binaries inflating to 240 MiB (every "
              "eighth to 4 GiB); beside them the slowest of %llu calls took %.1f ms\n",
              static_cast<unsigned long long>(report_u64(report, "loads")),
              static_cast<unsigned long long>(report_u64(report, "fat_binary_bytes")),
              static_cast<unsigned long long>(latency.calls), latency.worst_ms);
  CHECK(report_u64(report, "loads") >= 8);
  // One burst of eight such loads on the transport thread takes seconds.
  CHECK(latency.worst_ms < 250);
  // The daemon counted the refusals and holds nothing for the bomber.
  const json s = daemon_status(d.runtime_dir());
  const json t = tenant_of(s, "bomber");
  INFO(s.dump(2));
  CHECK(t["refused"].get<uint64_t>() >= report_u64(report, "loads"));
  CHECK(holds_nothing(t));
}
