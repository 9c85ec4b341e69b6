// Reaps ended worker processes in the background. A killed worker can take a
// while to go: the driver tears its context down first (the GPU stops the
// context's work then). Nobody should wait for that on the dispatcher or the
// transport thread.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace vgpu::executor::cuda {

class Reaper {
 public:
  Reaper();
  ~Reaper();  // waits for every process handed over
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  // `pid` has been sent SIGKILL (or is exiting); `what` names it in the log.
  void reap(pid_t pid, std::string what);
  // Processes handed over and not reaped yet.
  size_t pending() const;

 private:
  void run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<pid_t, std::string>> queue_;  // guarded by mu_
  size_t in_progress_ = 0;                            // guarded by mu_
  bool stopping_ = false;                             // guarded by mu_
  std::thread thread_;
};

// "killed by SIGKILL", "exited with status 3".
std::string describe_exit(int status);

}  // namespace vgpu::executor::cuda
