// DeviceReplug::stop() returns only once the job in hand has finished: its
// callbacks reach the transport loop, which Daemon::stop destroys next. (It
// used to set a flag and return, leaving the job to call into a destroyed
// loop: the hardening issue's item 10, confirmed.)
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <catch2/catch.hpp>

#include "test_driver.h"
#include "vgpu/host/device_replug.h"

using namespace vgpu::host;

TEST_CASE("replug: stop() waits for the job in hand; nothing of it runs afterwards") {
  vgpu::virt::test::TestConnection libvirt;  // the test driver's running domain "test"
  DeviceReplug replug(vgpu::virt::test::kTestUri);
  std::mutex mu;
  std::condition_variable cv;
  bool in_job = false, stop_called = false;
  std::atomic<bool> stop_returned{false}, ran_after_stop{false};

  ReplugJob job;
  job.uuid = "6695eb01-f6a4-8304-79aa-97f2502e193f";
  job.vm = "v";
  job.socket = "/nonexistent/v.sock";
  job.still_lost = [&] {
    std::unique_lock lock(mu);
    in_job = true;
    cv.notify_all();
    cv.wait(lock, [&] { return stop_called; });  // stop() is on its way
    return true;
  };
  job.before_plug = [&] {
    if (stop_returned) ran_after_stop = true;
  };
  replug.request(job);
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return in_job; });
  }
  std::thread stopper([&] {
    {
      std::lock_guard lock(mu);
      stop_called = true;
    }
    cv.notify_all();
    replug.stop();
    stop_returned = true;
  });
  stopper.join();
  // The job finished (and said how) before stop() returned.
  CHECK(replug.outcomes().size() == 1);
  CHECK_FALSE(ran_after_stop);
}
