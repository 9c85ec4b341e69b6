#include "reaper.h"

#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace vgpu::executor::cuda {

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return std::string("killed by SIG") + (name ? name : std::to_string(WTERMSIG(status)).c_str());
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended (status " + std::to_string(status) + ")";
}

Reaper::Reaper() : thread_([this] { run(); }) {}

Reaper::~Reaper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Reaper::reap(pid_t pid, std::string what) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.emplace_back(pid, std::move(what));
  }
  cv_.notify_all();
}

size_t Reaper::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size() + in_progress_;
}

void Reaper::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    auto [pid, what] = std::move(queue_.front());
    queue_.pop_front();
    ++in_progress_;
    lock.unlock();
    int status = 0;
    pid_t r;
    do {
      r = waitpid(pid, &status, 0);
    } while (r < 0 && errno == EINTR);
    if (r == pid) {
      spdlog::debug("cuda: {} (pid {}) {}", what, pid, describe_exit(status));
    } else {
      spdlog::warn("cuda: cannot reap {} (pid {}): {}", what, pid, std::strerror(errno));
    }
    lock.lock();
    --in_progress_;
  }
}

}  // namespace vgpu::executor::cuda
