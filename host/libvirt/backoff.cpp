#include "backoff.h"

#include <algorithm>

namespace vgpu::virt {

std::chrono::milliseconds Backoff::next() {
  const std::chrono::milliseconds now = next_;
  const auto grown = std::chrono::milliseconds(
      static_cast<int64_t>(static_cast<double>(next_.count()) * std::max(p_.factor, 1.0)));
  next_ = std::min(std::max(grown, p_.initial), p_.max);
  return std::min(now, p_.max);
}

}  // namespace vgpu::virt
