// VMs killed with SIGKILL at random moments of their CUDA calls, 100 times:
// every allocation, stream, event, module and queue entry each one held is
// released (the daemon's own accounting says so, within a bound), no worker
// process or descriptor is left behind, and VMs running beside them see no
// error at all.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include <catch2/catch.hpp>

#include "robust_harness.h"

using namespace vgpu::test;
using namespace std::chrono_literals;

TEST_CASE("VMs killed mid-call 100 times leave nothing behind, and the others see no error",
          "[kill]") {
  constexpr int kKills = 100;
  constexpr int kAtOnce = 4;
  Daemon d;
  const json idle = daemon_status(d.runtime_dir());
  REQUIRE(idle.is_object());

  Bystanders others([&](const std::string& vm, const std::string& p) { return d.start(vm, p); },
                    {"bystander-1", "bystander-2"}, {"saxpy", "streams_events", "vector_add"});
  // What the victims run: endless kernels, streams and events with large
  // copies, allocations near a cap, short programs. Half of each wave is
  // killed at a random moment (it may not have started, or have finished);
  // the other half once the daemon shows it holding device state (an event,
  // not a time: on a loaded machine a program can take seconds to start), so
  // at least half the kills hit a VM that holds something.
  const std::vector<std::vector<std::string>> programs = {
      {"busy", "300", "1000000"}, {"streams_events"}, {"alloc", "64", "8"},
      {"vector_add"},             {"saxpy"},          {"constant_memory"}};
  const std::vector<std::vector<std::string>> long_programs = {{"busy", "300", "1000000"},
                                                               {"busy", "20", "1000000", "4"}};
  std::mt19937 rng(std::random_device{}());
  int held_something = 0, finished_first = 0;
  std::vector<double> release_ms;
  for (int wave = 0; wave < kKills / kAtOnce; ++wave) {
    struct Victim {
      std::string vm;
      std::unique_ptr<Process> proc;
      int after_ms;  // < 0: once it holds device state
    };
    std::vector<Victim> victims;
    for (int i = 0; i < kAtOnce; ++i) {
      const bool once_holding = i % 2 == 0;
      const auto& p = once_holding ? long_programs[rng() % long_programs.size()]
                                   : programs[rng() % programs.size()];
      Victim v;
      v.vm = "victim-" + std::to_string(i);
      v.proc = d.start(v.vm, p[0], {p.begin() + 1, p.end()});
      v.after_ms = once_holding ? -1 : std::uniform_int_distribution<int>(30, 900)(rng);
      victims.push_back(std::move(v));
    }
    std::sort(victims.begin(), victims.end(),
              [](const Victim& a, const Victim& b) { return a.after_ms < b.after_ms; });
    const auto start = std::chrono::steady_clock::now();
    for (Victim& v : victims) {
      bool holds = false;
      if (v.after_ms < 0) {
        // Killed at once: somewhere in its loop of launches and synchronizations.
        holds = eventually(
            [&] { return !holds_nothing(tenant_of(daemon_status(d.runtime_dir()), v.vm)); }, 60s);
      } else {
        std::this_thread::sleep_until(start + std::chrono::milliseconds(v.after_ms));
      }
      // What it holds right before it dies (the status call takes a few ms).
      if (holds || !holds_nothing(tenant_of(daemon_status(d.runtime_dir()), v.vm)))
        held_something++;
      if (!v.proc->running()) finished_first++;
      kill(-v.proc->pid(), SIGKILL);
    }
    const auto killed = std::chrono::steady_clock::now();
    for (Victim& v : victims) v.proc->wait(10s);
    // Everything each victim held is released, within a bound.
    json s;
    const bool released = eventually(
        [&] {
          s = daemon_status(d.runtime_dir());
          return std::all_of(victims.begin(), victims.end(),
                             [&](const Victim& v) { return holds_nothing(tenant_of(s, v.vm)); });
        },
        10s);
    release_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - killed).count());
    INFO("wave " << wave << ": " << s.dump(2));
    REQUIRE(released);
  }
  others.stop();
  for (const std::string& failure : others.failures()) FAIL_CHECK(failure);

  // Nothing left anywhere: no context, no worker process, no descriptor.
  json end;
  CHECK(eventually(
      [&] {
        end = daemon_status(d.runtime_dir());
        return end["backend"]["contexts"] == 0 && end["process"]["children"] == 0 &&
               end["transport"]["channels"] == 0 && end["queued"] == 0;
      },
      10s));
  INFO(end.dump(2));
  CHECK(end["backend"]["device_bytes"] == 0);
  CHECK(end["process"]["fds"].get<uint64_t>() <= idle["process"]["fds"].get<uint64_t>());
  for (const json& t : end["tenants"]) CHECK(holds_nothing(t));
  std::sort(release_ms.begin(), release_ms.end());
  std::printf("kill: %d kills (%d while the victim held device state, %d after it had finished), "
              "released within %.0f ms (median %.0f ms, polled), %d bystander runs, slowest %.1f s\n",
              kKills, held_something, finished_first, release_ms.back(),
              release_ms[release_ms.size() / 2], others.runs(), others.slowest_s());
  CHECK(held_something >= kKills / 2);
}
