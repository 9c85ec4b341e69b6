// How long to wait before the next attempt to reach libvirt: `initial`,
// then `factor` times longer after each failure, at most `max`; back to
// `initial` after a success.
#pragma once

#include <chrono>

namespace vgpu::virt {

class Backoff {
 public:
  struct Params {
    std::chrono::milliseconds initial{500};
    std::chrono::milliseconds max{30000};
    double factor = 2.0;
  };

  explicit Backoff(Params p) : p_(p), next_(p.initial) {}
  // The delay before the next attempt (after a failure).
  std::chrono::milliseconds next();
  void reset() { next_ = p_.initial; }

 private:
  Params p_;
  std::chrono::milliseconds next_;
};

}  // namespace vgpu::virt
