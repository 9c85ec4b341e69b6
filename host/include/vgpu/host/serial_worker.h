// One thread that runs posted tasks in order: work that may wait (a database
// write waiting out another program's lock) handed off by threads that must
// not wait (the transport loop every VM's calls go through).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace vgpu::host {

class SerialWorker {
 public:
  SerialWorker();
  ~SerialWorker();  // stop()
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  // Any thread; dropped after stop().
  void post(std::function<void()> task);
  // Any thread but the worker's own: returns once every task posted before
  // the call has run (at once after stop()).
  void drain();
  // Runs what is queued, then ends the thread.
  void stop();

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace vgpu::host
