// vgpud's readiness and watchdog protocol (service_notify.h), received on a
// socket of the test's own as systemd would receive it.
#include "service_notify.h"

#include <stdlib.h>

#include <atomic>
#include <catch2/catch.hpp>

#include "notify_socket.h"

using vgpu::daemon::ServiceNotifier;
using vgpu::test::NotifySocket;
using namespace std::chrono_literals;

namespace {

// The manager's environment for one test case, cleared after it.
struct ManagerEnv {
  ManagerEnv(const NotifySocket& socket, const char* watchdog_usec) {
    setenv("NOTIFY_SOCKET", socket.path().c_str(), 1);
    unsetenv("WATCHDOG_PID");
    if (watchdog_usec)
      setenv("WATCHDOG_USEC", watchdog_usec, 1);
    else
      unsetenv("WATCHDOG_USEC");
  }
  ~ManagerEnv() {
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
  }
};

}  // namespace

TEST_CASE("service notifier: READY with a status then pings only while the loop answers", "[service]") {
  NotifySocket manager;
  ManagerEnv env(manager, "100000");
  std::atomic<int> probes{0};
  ServiceNotifier service;
  // The first three probes find the loop silent: none of them may be pinged.
  service.ready("serving VMs", [&](std::chrono::milliseconds within) {
    CHECK(within.count() > 0);
    return ++probes > 3;
  });
  CHECK(manager.next() == "READY=1\nSTATUS=serving VMs");
  CHECK(service.watchdog_interval() == 50ms);
  CHECK(manager.next() == "WATCHDOG=1");
  CHECK(probes.load() >= 4);
  CHECK(manager.next() == "WATCHDOG=1");

  service.reloading();
  CHECK_THAT(manager.next_state(), Catch::StartsWith("RELOADING=1\nMONOTONIC_USEC="));
  service.ready_again();
  CHECK(manager.next_state() == "READY=1");
  service.stopping();
  CHECK(manager.next_state() == "STOPPING=1");
  CHECK_FALSE(manager.pending());  // the watchdog stopped before STOPPING
}

TEST_CASE("service notifier: no watchdog asked for: READY and STOPPING and no pings", "[service]") {
  NotifySocket manager;
  ManagerEnv env(manager, nullptr);
  bool probed = false;
  ServiceNotifier service;
  service.ready("serving", [&](std::chrono::milliseconds) { return probed = true; });
  CHECK(manager.next() == "READY=1\nSTATUS=serving");
  CHECK(service.watchdog_interval() == 0us);
  service.stopping();
  CHECK(manager.next() == "STOPPING=1");
  CHECK_FALSE(probed);
}

TEST_CASE("service notifier: another process's watchdog (WATCHDOG_PID) is not this one's", "[service]") {
  NotifySocket manager;
  ManagerEnv env(manager, "100000");
  setenv("WATCHDOG_PID", "1", 1);
  ServiceNotifier service;
  service.ready("serving", [](std::chrono::milliseconds) { return true; });
  CHECK(manager.next() == "READY=1\nSTATUS=serving");
  CHECK(service.watchdog_interval() == 0us);
  unsetenv("WATCHDOG_PID");
}

TEST_CASE("service notifier: without a manager every call does nothing", "[service]") {
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  ServiceNotifier service;
  service.ready("serving", [](std::chrono::milliseconds) { return true; });
  service.reloading();
  service.ready_again();
  service.stopping();
  CHECK(service.watchdog_interval() == 0us);
}
