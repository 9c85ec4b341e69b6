// vgpud as systemd runs it (Type=notify, WatchdogSec): a real vgpud with
// $NOTIFY_SOCKET pointing at the test's socket.
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>

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
