// A doorbell: an eventfd one side sleeps on and the other side rings.
#pragma once

#include "vgpu/protocol/polling.h"

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

// How long each side polls, and how (vgpu/protocol/polling.h).
using proto::kPauseBeforeYield;
using proto::kPollBeforeSleep;
using proto::poll_step;

}  // namespace vgpu::transport
