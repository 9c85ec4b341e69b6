// vgpud as systemd runs it (Type=notify, WatchdogSec): a real vgpud with
// $NOTIFY_SOCKET pointing at the test's socket.
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "../unit/vgpud/notify_socket.h"
#include "harness.h"

using namespace vgpu::test;
using namespace std::chrono_literals;

TEST_CASE("vgpud under systemd: ready once it listens then watchdog pings from its loop then reload and stop announced") {
  TempDir dir;
  NotifySocket manager;
  Process vgpud({vgpud_path(), "--backend", "sim", "--runtime-dir", dir.path(), "--db",
                 dir.path() + "/vgpu.db", "--libvirt", "none", "--log-target", "stderr"},
                dir.path() + "/vgpud.log",
                {"NOTIFY_SOCKET=" + manager.path(), "WATCHDOG_USEC=400000"});
  const std::string ready = manager.next();
  INFO(read_file(dir.path() + "/vgpud.log"));
  REQUIRE_THAT(ready, Catch::StartsWith("READY=1\nSTATUS=serving VMs at " + dir.path()));
  // Ready means a VM can connect now.
  CHECK(std::filesystem::exists(dir.path() + "/vgpud.sock"));
  CHECK(manager.next() == "WATCHDOG=1");
  CHECK(manager.next() == "WATCHDOG=1");

  vgpud.signal(SIGHUP);
  CHECK_THAT(manager.next_state(), Catch::StartsWith("RELOADING=1\nMONOTONIC_USEC="));
  CHECK(manager.next_state() == "READY=1");
  // Still serving after the reload: the loop answers the watchdog's probes.
  CHECK(manager.next() == "WATCHDOG=1");

  vgpud.signal(SIGTERM);
  CHECK(manager.next_state() == "STOPPING=1");
  const RunResult r = vgpud.wait(60s);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("systemd watchdog: a ping every 200 ms"));
}

TEST_CASE("vgpud.toml configures vgpud: the command line wins and a reload applies the scheduling and names what needs a restart") {
  TempDir dir;
  const std::string config = dir.path() + "/vgpud.toml";
  const auto write_config = [&](const std::string& slice, const std::string& watchdog) {
    std::ofstream(config) << "# as an admin writes /etc/vgpu/vgpud.toml\n"
                          << "backend = \"sim\"\n"
                          << "db = \"" << dir.path() << "/vgpu.db\"\n"
                          << "libvirt = \"none\"\n"
                          << "log-target = \"stderr\"\n"
                          << "sim-memory-gib = 2\n"
                          << "watchdog-s = " << watchdog << "\n"
                          << "policy = \"fixed-share\"\n"
                          << "slice-ms = " << slice << "\n"
                          << "[weights]\nalice = 4\n";
  };
  write_config("3", "10");
  NotifySocket manager;
  Process vgpud({vgpud_path(), "--config", config, "--runtime-dir", dir.path(), "--sim-memory-gib", "3"},
                dir.path() + "/vgpud.log", {"NOTIFY_SOCKET=" + manager.path()});
  INFO(read_file(dir.path() + "/vgpud.log"));
  REQUIRE_THAT(manager.next(), Catch::StartsWith("READY=1"));
  std::string log = read_file(dir.path() + "/vgpud.log");
  CHECK_THAT(log, Catch::Contains("vgpud: configuration from " + config));
  CHECK_THAT(log, Catch::Contains("sim: device 'vgpu sim', 3072 MiB"));  // the flag's 3, not the file's 2
  CHECK_THAT(log, Catch::Contains("watchdog 10000 ms"));
  CHECK_THAT(log, Catch::Contains("scheduling: policy fixed-share, slice 3 ms, overlap depth 4, 1 VM weight(s)"));
  CHECK(std::filesystem::exists(dir.path() + "/vgpu.db"));

  // systemctl reload: the slice applies now; the watchdog only after a restart.
  write_config("4", "5");
  vgpud.signal(SIGHUP);
  CHECK_THAT(manager.next_state(), Catch::StartsWith("RELOADING=1"));
  CHECK(manager.next_state() == "READY=1");
  log = read_file(dir.path() + "/vgpud.log");
  CHECK_THAT(log, Catch::Contains("scheduling now policy fixed-share, slice 4 ms"));
  CHECK_THAT(log, Catch::Contains("'watchdog-s' changed; it takes effect when vgpud restarts"));
  CHECK_THAT(log, !Catch::Contains("'slice-ms' changed"));

  vgpud.signal(SIGTERM);
  CHECK(vgpud.wait(60s).exit_code == 0);

  // A key that is no setting stops vgpud before it starts, named.
  std::ofstream(config) << "backend = \"sim\"\nbakend = \"cuda\"\n";
  Process wrong({vgpud_path(), "--config", config, "--runtime-dir", dir.path()},
                dir.path() + "/wrong.log");
  const RunResult r = wrong.wait(60s);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("'bakend' is no vgpud setting"));
}
