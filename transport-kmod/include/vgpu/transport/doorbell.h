// A doorbell: an eventfd one side sleeps on and the other side rings.
#pragma once

#include <sched.h>

#include <chrono>

namespace vgpu::transport {

class Doorbell {
 public:
  Doorbell() = default;
  explicit Doorbell(int fd) : fd_(fd) {}  // takes ownership
  static Doorbell create();               // a fresh non-blocking eventfd, or fd -1
  ~Doorbell();
  Doorbell(Doorbell&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Doorbell& operator=(Doorbell&& o) noexcept;
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void ring() const;
  void drain() const;  // consume pending rings without blocking

 private:
  int fd_ = -1;
};

// How long a side polls before it sleeps on its doorbell. Polling answers a
// busy peer without a wake-up per message; sleeping keeps an idle side at zero
// CPU.
inline constexpr std::chrono::microseconds kPollBeforeSleep{50};

// One step of a polling loop that has been waiting since `since`: a pause at
// first, then, after a few microseconds, the CPU is yielded between checks.
// On a host with fewer cores than busy threads (the program, vgpud's loop
// and its dispatcher), a poller that only paused would keep the thread that
// has the work to do off a core until the scheduler's next tick.
inline void poll_step(std::chrono::steady_clock::time_point since) {
  if (std::chrono::steady_clock::now() - since < std::chrono::microseconds(5)) {
    __builtin_ia32_pause();
  } else {
    sched_yield();
  }
}

}  // namespace vgpu::transport
