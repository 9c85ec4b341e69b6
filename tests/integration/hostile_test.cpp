// A hostile simulated VM writes lies into its ring for a bounded time: forged
// handles, another tenant's device pointer, data-area ranges outside its
// area, wrong lengths, unknown opcodes; and, on fresh channels, bytes and
// indices that break the ring rules. Every lie inside a well-framed message
// must get an error reply (channel kept), every broken ring must be closed,
// each counted by the daemon; the other VMs run real programs meanwhile and
// must all PASS, and the victim's memory must be untouched.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "robust_harness.h"

using namespace vgpu::test;
using namespace std::chrono_literals;

namespace {

std::string tail(const std::string& s) { return s.size() > 3000 ? s.substr(s.size() - 3000) : s; }

}  // namespace

TEST_CASE("a hostile VM gets an error for every lie, loses only its broken channels, and the "
          "others carry on",
          "[hostile]") {
  Daemon d;
  const std::string socket = d.runtime_dir() + "/vgpud.sock";
  // A cooperating VM publishes a live device pointer for the hostile one to aim at.
  const std::string secret = d.runtime_dir() + "/secret.txt";
  auto owner = d.start("victim", "cross_tenant", {"owner", secret});
  REQUIRE(eventually([&] { return std::filesystem::exists(secret); }, 60s));
  std::string foreign;
  std::ifstream(secret) >> foreign;
  REQUIRE(foreign.rfind("0x", 0) == 0);

  Bystanders others([&](const std::string& vm, const std::string& p) { return d.start(vm, p); },
                    {"bystander-1", "bystander-2"},
                    {"saxpy", "vector_add", "streams_events", "struct_param"});
  const json before = daemon_status(d.runtime_dir());
  REQUIRE(before.is_object());

  const std::string seconds = "6";
  auto fields = start_test_vm("fields",
                              {"--socket", socket, "--vm", "hostile-fields", "--seconds", seconds,
                               "--foreign", foreign},
                              d.runtime_dir() + "/fields.txt");
  auto framing = start_test_vm("framing",
                               {"--socket", socket, "--vm", "hostile-framing", "--seconds", seconds},
                               d.runtime_dir() + "/framing.txt");
  const RunResult f = fields->wait(180s);
  const RunResult g = framing->wait(180s);
  others.stop();
  std::filesystem::remove(secret);
  const RunResult own = owner->wait(60s);

  INFO("fields:\n" << tail(f.output) << "\nframing:\n" << tail(g.output));
  CHECK(f.exit_code == 0);
  CHECK_THAT(f.output, Catch::Contains("RESULT ok"));
  CHECK(g.exit_code == 0);
  CHECK_THAT(g.output, Catch::Contains("RESULT ok"));
  const auto fr = report_of(f.output);
  const auto gr = report_of(g.output);
  CHECK(report_u64(fr, "attacks") > 1000);
  CHECK(report_u64(gr, "attacks") >= 8);

  // The victim's secret is intact, and the bystanders never noticed.
  INFO("victim:\n" << tail(own.output));
  CHECK(own.exit_code == 0);
  CHECK_THAT(own.output, Catch::Contains("secret intact"));
  for (const std::string& failure : others.failures()) FAIL_CHECK(failure);
  CHECK(others.runs() >= 2);

  // The daemon is up, counted every lie exactly, and closed every broken ring.
  json after;
  json hostile;
  REQUIRE(eventually(
      [&] {
        after = daemon_status(d.runtime_dir());
        hostile = tenant_of(after, "hostile-fields");
        return after.is_object() && holds_nothing(hostile) &&
               holds_nothing(tenant_of(after, "hostile-framing"));
      },
      10s));
  INFO(after.dump(2));
  CHECK(hostile["malformed"].get<uint64_t>() == report_u64(fr, "sent_malformed"));
  CHECK(hostile["refused"].get<uint64_t>() == report_u64(fr, "sent_refused"));
  CHECK(hostile["work_failed"].get<uint64_t>() == 0);
  CHECK(after["transport"]["corrupt_rings"].get<uint64_t>() -
            before["transport"]["corrupt_rings"].get<uint64_t>() ==
        report_u64(gr, "attacks"));
  // Nobody else broke a rule.
  for (const char* vm : {"bystander-1", "bystander-2", "victim"}) {
    INFO(vm);
    CHECK(tenant_of(after, vm).value("malformed", 0) == 0);
    CHECK(tenant_of(after, vm).value("refused", 0) == 0);
  }
  std::printf("hostile: %s field attacks (%s/s, %s malformed, %s refused), %s framing attacks "
              "(closed in %s ms on average, %s ms at worst), %d bystander runs (slowest %.1f s)\n",
              fr.at("attacks").c_str(), fr.at("attacks_per_s").c_str(),
              fr.at("sent_malformed").c_str(), fr.at("sent_refused").c_str(),
              gr.at("attacks").c_str(), gr.at("close_ms_mean").c_str(),
              gr.at("close_ms_max").c_str(), others.runs(), others.slowest_s());
  // And it still serves.
  const RunResult last = d.run("bystander-1", "saxpy");
  CHECK_THAT(last.output, Catch::Contains("PASS saxpy"));
}

TEST_CASE("a real VM's guest kernel cannot make up processes on a slot another process holds",
          "[hostile]") {
  Daemon d({"--vm-plain", "hostile-real"});
  const std::string region = d.runtime_dir() + "/vms/hostile-real.shm";
  REQUIRE(eventually([&] { return std::filesystem::exists(region); }, 20s));
  const RunResult r = run_test_vm("slots", {"--region", region, "--count", "200"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("RESULT ok"));
  const json s = daemon_status(d.runtime_dir());
  const json vm = tenant_of(s, "hostile-real");
  INFO(s.dump(2));
  // One context per slot at most, whatever generations the guest made up.
  CHECK(vm["contexts"].get<uint64_t>() <= 16);
  CHECK(vm["malformed"].get<uint64_t>() == 201);
}
