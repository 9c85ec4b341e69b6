#include "vgpu/transport/doorbell.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace vgpu::transport {

Doorbell Doorbell::create() { return Doorbell(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)); }

Doorbell::~Doorbell() {
  if (fd_ >= 0) close(fd_);
}

Doorbell& Doorbell::operator=(Doorbell&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void Doorbell::ring() const {
  const uint64_t one = 1;
  // EAGAIN means the counter is saturated: the sleeper will wake anyway.
  [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof one);
}

void Doorbell::drain() const {
  uint64_t v;
  [[maybe_unused]] ssize_t n = read(fd_, &v, sizeof v);
}

}  // namespace vgpu::transport
