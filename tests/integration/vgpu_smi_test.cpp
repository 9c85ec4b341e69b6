// vgpu-smi in a VM (run through vgpu-run, as a student would in a simulated
// VM): the virtual GPU as the VM sees it, and the student's GPU-time budget
// as vgpud keeps it, spent time included.
#include <csignal>
#include <ctime>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "quota_harness.h"

using namespace vgpu::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

constexpr int64_t kMs = 1000000;

std::string smi_path() { return VGPU_TEST_VGPU_SMI; }

struct Class {
  TempDir dir;
  QuotaDaemon daemon{dir.path(), dir.path() + "/vgpu.db"};

  void ctl(const std::vector<std::string>& args) {
    const RunResult r = daemon.ctl(args);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  RunResult smi(const std::string& vm, const std::vector<std::string>& args = {}) {
    return daemon.run(vm, smi_path(), args);
  }
  json smi_json(const std::string& vm) {
    const RunResult r = smi(vm, {"-o", "json"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.output);
  }
};

}  // namespace

TEST_CASE("vgpu-smi shows the student's budget: what is spent and left and when it renews",
          "[smi]") {
  Class c;
  c.ctl({"course", "create", "cs101"});
  c.ctl({"student", "add", "sam", "--course", "cs101", "--vm", "sam-vm"});
  c.ctl({"quota", "set", "sam", "--gpu-time", "2h/week", "--memory", "256MiB", "--on-exhaust",
         "wait"});

  const json before = c.smi_json("sam-vm");
  INFO(before.dump(2));
  CHECK(before["gpu"]["memory_total"] == 256ull << 20);  // the cap is the VM's GPU memory
  const json& b = before["budget"];
  CHECK(b["student"] == "sam");
  CHECK(b["course"] == "cs101");
  CHECK(b["vm"] == "sam-vm");
  CHECK(b["quota"] == "2h/week");
  CHECK(b["limited"] == true);
  CHECK(b["renews"] == true);
  CHECK(b["on_exhaust"] == "wait");
  CHECK(b["memory_cap"] == 256ull << 20);
  const int64_t now = std::time(nullptr);
  CHECK(b["window_start"].get<int64_t>() <= now);
  CHECK(b["window_end"].get<int64_t>() > now);
  CHECK(b["window_end"].get<int64_t>() - b["window_start"].get<int64_t>() == 7 * 86400);
  const int64_t spent0 = b["spent_ns"].get<int64_t>();
  CHECK(b["left_ns"].get<int64_t>() == 2 * 3600 * 1000 * kMs - spent0);

  // 100 kernels of 2 ms: at least 200 ms of GPU time charged to sam.
  const RunResult busy = c.daemon.run("sam-vm", "busy", {"2000", "100"});
  INFO(busy.output);
  REQUIRE(busy.exit_code == 0);
  const json after = c.smi_json("sam-vm")["budget"];
  const int64_t spent = after["spent_ns"].get<int64_t>();
  CHECK(spent >= spent0 + 200 * kMs);
  CHECK(after["left_ns"].get<int64_t>() == 2 * 3600 * 1000 * kMs - spent);

  // The table says the same to a person.
  const RunResult table = c.smi("sam-vm");
  INFO(table.output);
  CHECK(table.exit_code == 0);
  CHECK_THAT(table.output, Catch::Contains("student sam (course cs101), VM sam-vm"));
  CHECK_THAT(table.output, Catch::Contains("quota        2h/week"));
  CHECK_THAT(table.output, Catch::Contains("renews"));
  CHECK_THAT(table.output, Catch::Contains("MiB / 256MiB"));
  CHECK_THAT(table.output, Catch::Contains("its work waits until the budget renews"));
}

TEST_CASE("vgpu-smi in a VM bound to no student says so; without vgpud it exits 9", "[smi]") {
  Class c;
  const json j = c.smi_json("stray-vm");
  INFO(j.dump(2));
  CHECK(j["budget"]["student"] == "");
  CHECK(j["budget"]["limited"] == false);
  CHECK(j["budget"]["left_ns"].is_null());
  CHECK_THAT(c.smi("stray-vm").output, Catch::Contains("GPU-time budget of no student"));

  // No daemon behind the runtime directory: vgpu-smi itself (not vgpu-run)
  // says it cannot reach vgpud.
  const RunResult r = run_command({smi_path()}, -1, 60s);
  INFO(r.output);
  CHECK(r.exit_code == 9);
  CHECK_THAT(r.output, Catch::Contains("vgpu-smi: vgpud cannot be reached"));
}

TEST_CASE("vgpu-smi lists the VM's own processes on the GPU and not another VM's", "[smi]") {
  Class c;
  // Holding 24 MiB of device memory while it runs.
  auto busy = c.daemon.start("sam-vm", "busy", {"2000", "100000", "0", "24"});  // killed below
  // Until its kernels run (top says so): its process is on the GPU then.
  REQUIRE(c.daemon.wait_for_state("sam-vm", "busy", *busy));
  const json own = c.smi_json("sam-vm");
  const json other = c.smi_json("other-vm");
  const RunResult table = c.smi("sam-vm");
  busy->signal(SIGKILL);
  busy->wait(30s);
  INFO(own.dump(2) << other.dump(2));
  // vgpu-run execs the program: its pid is the one the harness started.
  // With the device memory its allocations hold, as vgpud counts it.
  bool listed = false;
  for (const json& p : own["processes"]) {
    if (p["name"] != "busy" || p["pid"] != busy->pid()) continue;
    listed = true;
    CHECK(p["memory_bytes"] == 24u << 20);
  }
  CHECK(listed);
  INFO(table.output);
  CHECK(table.output.find("busy") != std::string::npos);
  CHECK(table.output.find("24MiB") != std::string::npos);
  CHECK(other["processes"].empty());  // vgpu-smi does not list itself
}
