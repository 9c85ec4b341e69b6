// vgpud under systemd's Type=notify (sd_notify(3)): READY=1 once every
// socket listens, RELOADING=1 then READY=1 around a SIGHUP reload,
// STOPPING=1 at shutdown, and WATCHDOG=1 every half WatchdogSec while the
// daemon's transport loop answers a probe. A loop that stops answering (every
// VM's calls and the guests' heartbeat go through it) gets no ping, and
// systemd restarts the service. Without $NOTIFY_SOCKET every call does nothing.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace vgpu::daemon {

class ServiceNotifier {
 public:
  // `alive(within)`: true when the daemon's loop answered within `within`.
  using Probe = std::function<bool(std::chrono::milliseconds within)>;

  ServiceNotifier() = default;
  ~ServiceNotifier();  // stops the watchdog thread
  ServiceNotifier(const ServiceNotifier&) = delete;
  ServiceNotifier& operator=(const ServiceNotifier&) = delete;

  // READY=1 with STATUS=`status`; starts the watchdog pings when systemd
  // asked for them (WATCHDOG_USEC, and WATCHDOG_PID if set is this process).
  void ready(const std::string& status, Probe alive);
  void reloading();             // RELOADING=1 (then ready_again())
  void ready_again();           // READY=1 after a reload
  void stopping();              // STOPPING=1; the watchdog stops
  // The ping interval (half of WatchdogSec); zero when there is no watchdog.
  std::chrono::microseconds watchdog_interval() const { return interval_; }

 private:
  void watchdog_loop();

  Probe alive_;
  std::chrono::microseconds interval_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace vgpu::daemon
