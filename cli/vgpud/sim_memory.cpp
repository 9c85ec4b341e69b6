#include "sim_memory.h"

#include <unistd.h>

#include <algorithm>

#include <spdlog/fmt/fmt.h>

namespace vgpu::daemon {

namespace {
constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kLargestDefaultGiB = 16;
}  // namespace

uint64_t default_sim_memory_gib(uint64_t host_bytes) {
  if (host_bytes == 0) return kLargestDefaultGiB;
  return std::clamp<uint64_t>(host_bytes / 2 / kGiB, 1, kLargestDefaultGiB);
}

std::string sim_memory_warning(uint64_t gib, uint64_t host_bytes) {
  if (host_bytes == 0 || gib * kGiB <= host_bytes / 4 * 3) return {};
  return fmt::format(
      "--sim-memory-gib {}: the sim's device memory is host memory, and this host has {:.1f} GiB; "
      "tenants that fill it would leave the host short and the OOM killer could stop vgpud",
      gib, static_cast<double>(host_bytes) / kGiB);
}

uint64_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

}  // namespace vgpu::daemon
