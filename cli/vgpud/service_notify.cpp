#include "service_notify.h"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include <cstdint>

namespace vgpu::daemon {

namespace {

void notify(const std::string& state) {
  // 0: nothing to report (no $NOTIFY_SOCKET); < 0: the manager is gone,
  // which is not the daemon's concern.
  if (sd_notify(0, state.c_str()) < 0) spdlog::debug("vgpud: sd_notify({}) failed", state);
}

uint64_t monotonic_usec() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

}  // namespace

ServiceNotifier::~ServiceNotifier() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ServiceNotifier::ready(const std::string& status, Probe alive) {
  notify("READY=1\nSTATUS=" + status);
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0 || thread_.joinable()) return;
  alive_ = std::move(alive);
  interval_ = std::chrono::microseconds(usec / 2);
  spdlog::info("vgpud: systemd watchdog: a ping every {} ms while the transport loop answers",
               usec / 2000);
  thread_ = std::thread([this] { watchdog_loop(); });
}

void ServiceNotifier::reloading() {
  notify("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(monotonic_usec()));
}

void ServiceNotifier::ready_again() { notify("READY=1"); }

void ServiceNotifier::stopping() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  notify("STOPPING=1");
}

void ServiceNotifier::watchdog_loop() {
  // The probe may take up to half the interval; the ping then still comes
  // well inside WatchdogSec.
  const auto within = std::chrono::duration_cast<std::chrono::milliseconds>(interval_ / 2);
  bool missed = false;
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    const bool ok = alive_(std::max(within, std::chrono::milliseconds(1)));
    if (ok) {
      notify("WATCHDOG=1");
      if (missed) spdlog::info("vgpud: the transport loop answers again: watchdog pings resumed");
    } else if (!missed) {
      spdlog::error("vgpud: the transport loop did not answer within {} ms: no watchdog ping "
                    "(systemd restarts vgpud if it stays so)",
                    within.count());
    }
    missed = !ok;
    lock.lock();
    cv_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

}  // namespace vgpu::daemon
