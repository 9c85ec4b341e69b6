// The guest kernel module in real QEMU guests (Debian's kernel under TCG),
// each wired to the vgpud this test starts: the guest loads the module, runs
// CUDA programs through /dev/vgpu and prints one line per result and its
// kernel's health on the console (tests/kmod/guest/guest-tests.sh).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

#include "harness.h"
#include "quota_harness.h"

using namespace vgpu::test;
using namespace std::chrono_literals;

namespace {

constexpr unsigned long kTaintOutOfTree = 1ul << 12;  // O
constexpr unsigned long kTaintUnsigned = 1ul << 13;   // E

struct Guest {
  std::string name;
  std::string console;
  std::unique_ptr<Process> qemu;
};

// Boots guest `name` running `scenario`; `plain`: over ivshmem-plain.
Guest boot(const Daemon& d, const std::string& name, const std::string& scenario, bool plain) {
  Guest g;
  g.name = name;
  g.console = d.runtime_dir() + "/console-" + name + ".txt";
  const std::string vms = d.runtime_dir() + "/vms/";
  std::vector<std::string> argv = {VGPU_TEST_VM_BOOT, "--image", VGPU_TEST_IMAGE_DIR, "--test",
                                   scenario, "--console", g.console};
  if (plain) {
    argv.insert(argv.end(), {"--plain", vms + name + ".shm"});
  } else {
    argv.insert(argv.end(), {"--socket", vms + name + ".sock"});
  }
  g.qemu = std::make_unique<Process>(argv, d.runtime_dir() + "/qemu-" + name + ".txt");
  return g;
}

// True once the guest's console shows `marker`; false if QEMU ends, or
// after `limit`.
bool console_shows(Guest& g, const std::string& marker, std::chrono::seconds limit = 300s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (g.qemu->running() && std::chrono::steady_clock::now() < end) {
    if (read_file(g.console).find(marker) != std::string::npos) return true;
    std::this_thread::sleep_for(50ms);
  }
  return read_file(g.console).find(marker) != std::string::npos;
}

// Boots guest vm1 in `scenario` (hoststop, hostkill, hostpause: a process
// holds device memory and keeps calling vgpud; hostpoll: a process waits in
// poll()) and waits until the guest says it is there.
Guest boot_holding(const Daemon& d, const std::string& scenario = "hoststop") {
  Guest g = boot(d, "vm1", scenario, false);
  REQUIRE(console_shows(g, "VGPU-HOLDING"));
  return g;
}

std::vector<std::string> lines_with(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind(prefix, 0) == 0) out.push_back(line.substr(prefix.size()));
  }
  return out;
}

// Waits for the guest to power off and checks its console: it finished,
// every result passed, each of `expected` passed, and the kernel stayed
// healthy (no warning, oops or taint but an out-of-tree, unsigned module).
void check_guest(Guest& g, const std::vector<std::string>& expected) {
  const RunResult r = g.qemu->wait(std::chrono::seconds(600));
  const std::string console = read_file(g.console);
  INFO("guest " << g.name << " console:\n" << console << "\nqemu: " << r.output);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  REQUIRE(console.find("VGPU-DONE") != std::string::npos);

  const auto results = lines_with(console, "VGPU-RESULT ");
  for (const auto& res : results) CHECK_THAT(res, Catch::EndsWith(" PASS"));
  for (const auto& name : expected) {
    bool passed = false;
    for (const auto& res : results) passed = passed || res == name + " PASS";
    CHECK_THAT(name, Catch::Predicate<std::string>([&](const std::string&) { return passed; },
                                                   "passed in the guest"));
  }
  for (const auto& warning : lines_with(console, "VGPU-KERNEL ")) FAIL_CHECK("kernel: " << warning);
  const auto taint = lines_with(console, "VGPU-TAINT ");
  REQUIRE(taint.size() == 1);
  const unsigned long t = std::stoul(taint[0]);
  CHECK((t & ~(kTaintOutOfTree | kTaintUnsigned)) == 0);

  // What was measured, for the log (ctest -V).
  for (const auto& b : lines_with(console, "VGPU-BOOTED ")) {
    std::printf("guest %s: booted in %s\n", g.name.c_str(), b.c_str());
  }
  for (const auto& rtt : lines_with(console, "VGPU-RTT ")) {
    std::printf("guest %s: cudaMemGetInfo round trip mean/min us: %s\n", g.name.c_str(),
                rtt.c_str());
  }
}

bool log_has(const Daemon& d, const std::string& text, std::chrono::milliseconds limit = 10s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (d.log().find(text) != std::string::npos) return true;
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(20ms);
  }
}

RunResult vgpuctl(const Daemon& d, const std::vector<std::string>& args) {
  return vgpu::test::vgpuctl(d.runtime_dir(), args);
}

// VM `vm`'s entry in vgpud's accounting; empty if it has none.
nlohmann::json vm_status(const Daemon& d, const std::string& vm) {
  return tenant_of(daemon_status(d.runtime_dir()), vm);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("one guest: the module, every program, two processes, a killed one, reload") {
  Daemon d({"--vm-socket", "vm1"});
  const auto start = std::chrono::steady_clock::now();
  Guest g = boot(d, "vm1", "main", false);
  check_guest(g, {"insmod", "vgpu_abi", "device_query", "saxpy", "vector_add", "struct_param",
                  "constant_memory", "streams_events", "pinned_memory", "unsupported_call", "error_paths",
                  "cross_tenant", "hold-started", "meminfo", "leaver", "rmmod", "static-device_query",
                  "static-saxpy", "static-vector_add", "static-streams_events", "static-managed_memory",
                  "static-graphs", "static-printf_program", "static-runtime_features",
                  "static-assert_program", "static-textures", "static-cooperative",
                  "static-threads", "static-many_copies", "static-pitched_copies", "driver_api", "vgpu-smi"});
  std::printf("guest vm1: %.1f s from boot to power-off\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  INFO(d.log());
  CHECK(log_has(d, "vm vm1: channel 1 opened"));
  // Each module load (attach) releases what the VM held and opens afresh; QEMU
  // exiting is the VM going away: every opening is matched by a release.
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (count(d.log(), "vm vm1: channel 1 closed, its device state released") <
             count(d.log(), "vm vm1: channel 1 opened") &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(20ms);
  }
  CHECK(count(d.log(), "vm vm1: channel 1 opened") >= 3);  // QEMU, insmod, insmod again
  CHECK(count(d.log(), "vm vm1: channel 1 closed, its device state released") ==
        count(d.log(), "vm vm1: channel 1 opened"));
  CHECK(d.stop().exit_code == 0);
}

TEST_CASE("two guests at once are two tenants (one over doorbells, one polling)") {
  Daemon d({"--vm-socket", "vm1", "--vm-plain", "vm2"});
  Guest a = boot(d, "vm1", "basic", false);
  Guest b = boot(d, "vm2", "basic", true);
  check_guest(a, {"insmod", "saxpy", "vector_add", "meminfo"});
  check_guest(b, {"insmod", "saxpy", "vector_add", "meminfo"});
  INFO(d.log());
  // Each VM's channel is its own tenant, named after the VM.
  CHECK(log_has(d, "vm vm1: channel"));
  CHECK(log_has(d, "vm vm2: channel"));
  CHECK(d.stop().exit_code == 0);
}

TEST_CASE("one guest: vgpud stopping gives the guest's processes an error, not a hang") {
  auto d = std::make_unique<Daemon>(std::vector<std::string>{"--vm-socket", "vm1"});
  Guest g = boot_holding(*d);
  CHECK(d->stop().exit_code == 0);  // closes the VM's channel: the guest is told
  check_guest(g, {"insmod", "host-stop", "channel-closed"});
}

TEST_CASE("one guest: vgpud killed outright gives the guest's processes an error, not a hang") {
  auto d = std::make_unique<Daemon>(std::vector<std::string>{"--vm-socket", "vm1"});
  Guest g = boot_holding(*d, "hostkill");
  // Nothing closes the channel now: QEMU keeps the region and tells the guest
  // nothing. The module sees the host's heartbeat stand still and fails the
  // calls waiting on it, and every later open.
  d->kill9();
  check_guest(g, {"insmod", "host-stop", "host-silent"});
  CHECK(read_file(g.console).find("the host stopped answering") != std::string::npos);
}

TEST_CASE("one guest: vgpud paused for a while, then on: the guest serves new processes again") {
  auto d = std::make_unique<Daemon>(std::vector<std::string>{"--vm-socket", "vm1"});
  Guest g = boot_holding(*d, "hostpause");
  const auto opened = [&] { return count(d->log(), "vm vm1: channel 1 opened"); };
  const size_t before = opened();  // QEMU, and the module's attach at insmod
  // Stopped (a debugger, SIGSTOP, the host swapping) long enough that the
  // module takes it for dead.
  REQUIRE(kill(d->pid(), SIGSTOP) == 0);
  const bool silent = console_shows(g, "VGPU-SILENT", 120s);
  REQUIRE(kill(d->pid(), SIGCONT) == 0);
  REQUIRE(silent);
  check_guest(g, {"insmod", "host-stop", "host-silent", "saxpy", "meminfo"});
  const std::string console = read_file(g.console);
  CHECK(console.find("the host stopped answering") != std::string::npos);
  CHECK(console.find("the host answers again") != std::string::npos);
  // The module attached afresh: the VM's channel was reset once more, which
  // released what the held process had (meminfo released, in the guest).
  INFO(d->log());
  CHECK(opened() == before + 1);
  CHECK(d->stop().exit_code == 0);
}

TEST_CASE("one guest: refused while unassigned, then bound by a teacher: runs without a reboot") {
  auto d = std::make_unique<Daemon>(std::vector<std::string>{"--vm-socket", "vm1"});
  const RunResult refuse = vgpuctl(*d, {"quota", "set", "--default", "--unassigned", "refuse"});
  INFO(refuse.output);
  REQUIRE(refuse.exit_code == 0);
  Guest g = boot(*d, "vm1", "unassigned", false);
  REQUIRE(console_shows(g, "VGPU-REFUSED"));
  // The admin sees the VM waiting for a student.
  const RunResult waiting = vgpuctl(*d, {"status"});
  INFO(waiting.output);
  CHECK(waiting.output.find("not admitted (bound to no student; their calls are refused until "
                            "one is bound, no reboot needed): vm1") != std::string::npos);
  CHECK(vm_status(*d, "vm1").value("waiting", -1) == 1);
  CHECK(vm_status(*d, "vm1").value("channels", -1) == 0);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"course", "create", "gpu101"},
        std::vector<std::string>{"student", "add", "alice", "--course", "gpu101", "--vm", "vm1"}}) {
    const RunResult r = vgpuctl(*d, args);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  check_guest(g, {"insmod", "not-admitted", "saxpy"});
  INFO(d->log());
  CHECK(log_has(*d, "vm vm1: channel 1 admitted now"));
  // No longer waiting (admitted; by now the guest is off and the VM may be
  // forgotten: a wait not ended would keep it listed).
  CHECK(vm_status(*d, "vm1").value("waiting", 0) == 0);
  CHECK(d->stop().exit_code == 0);
}

TEST_CASE("one guest: a process waiting in poll() is told when vgpud is killed outright") {
  auto d = std::make_unique<Daemon>(std::vector<std::string>{"--vm-socket", "vm1"});
  Guest g = boot_holding(*d, "hostpoll");
  // Only poll() waits: the module's watchdog must watch for it too.
  d->kill9();
  check_guest(g, {"insmod", "vgpu_abi_hangup"});
  CHECK(read_file(g.console).find("the host stopped answering") != std::string::npos);
}
