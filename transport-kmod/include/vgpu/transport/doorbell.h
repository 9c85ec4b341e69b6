// A doorbell: an eventfd one side sleeps on and the other side rings.
#pragma once

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

}  // namespace vgpu::transport
