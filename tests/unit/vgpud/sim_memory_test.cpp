// The sim backend's default device size fits the host it runs on: its device
// memory is host memory, and a tenant may fill its share.
#include "sim_memory.h"

#include <catch2/catch.hpp>

using vgpu::daemon::default_sim_memory_gib;
using vgpu::daemon::host_memory_bytes;
using vgpu::daemon::sim_memory_warning;

namespace {
constexpr uint64_t kGiB = 1ull << 30;
}

TEST_CASE("sim memory defaults to 16 GiB or half the host's memory") {
  CHECK(default_sim_memory_gib(256 * kGiB) == 16);
  CHECK(default_sim_memory_gib(32 * kGiB) == 16);
  CHECK(default_sim_memory_gib(24 * kGiB) == 12);
  CHECK(default_sim_memory_gib(8 * kGiB) == 4);
  CHECK(default_sim_memory_gib(kGiB) == 1);  // never 0
  CHECK(default_sim_memory_gib(0) == 16);    // unknown host
}

TEST_CASE("an explicit sim memory size the host cannot back is warned about") {
  CHECK(sim_memory_warning(16, 64 * kGiB).empty());
  CHECK(sim_memory_warning(18, 24 * kGiB).empty());  // exactly three quarters
  const std::string w = sim_memory_warning(20, 24 * kGiB);
  CHECK(w.find("--sim-memory-gib 20") != std::string::npos);
  CHECK(w.find("24.0 GiB") != std::string::npos);
  CHECK(sim_memory_warning(1024, 0).empty());  // unknown host: nothing to say
}

TEST_CASE("the host's memory is known on Linux") {
  CHECK(host_memory_bytes() > 64ull << 20);
}
