// SerialWorker: tasks run one at a time, in the order posted, on one thread
// other than the poster's; stop() runs what is queued, and later posts are
// dropped.
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "vgpu/host/serial_worker.h"

using namespace vgpu::host;
using namespace std::chrono_literals;

TEST_CASE("posted tasks run in order on the worker's thread; stop runs what is queued") {
  SerialWorker w;
  std::mutex mu;
  std::vector<int> ran;
  std::atomic<int> running{0}, overlapped{0};
  std::thread::id worker_id;
  for (int i = 0; i < 50; ++i) {
    w.post([&, i] {
      if (running.fetch_add(1) != 0) overlapped++;
      std::this_thread::sleep_for(1ms);  // a write that waits
      {
        std::lock_guard lock(mu);
        ran.push_back(i);
        worker_id = std::this_thread::get_id();
      }
      running.fetch_sub(1);
    });
  }
  w.stop();  // returns once all 50 ran
  w.post([&] { ran.push_back(-1); });  // after stop: dropped
  w.stop();                            // again: nothing to do
  REQUIRE(ran.size() == 50);
  for (int i = 0; i < 50; ++i) CHECK(ran[i] == i);
  CHECK(overlapped == 0);
  CHECK(worker_id != std::this_thread::get_id());
}

TEST_CASE("posting does not wait for a task that waits") {
  SerialWorker w;
  std::atomic<bool> release{false};
  w.post([&] {
    while (!release) std::this_thread::sleep_for(1ms);  // another program's lock, say
  });
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) w.post([] {});
  CHECK(std::chrono::steady_clock::now() - t0 < 200ms);
  release = true;
}

TEST_CASE("drain returns once everything posted before it has run, and the worker goes on") {
  SerialWorker w;
  std::atomic<int> ran{0};
  for (int i = 0; i < 20; ++i) {
    w.post([&] {
      std::this_thread::sleep_for(1ms);
      ran++;
    });
  }
  w.drain();
  CHECK(ran == 20);
  w.post([&] { ran++; });
  w.drain();
  CHECK(ran == 21);
  w.stop();
  w.drain();  // after stop: returns at once
}
