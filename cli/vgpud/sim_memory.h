// How much device memory the sim backend models. Its device memory is host
// memory (a memfd the daemon maps: copies land there), so a tenant that fills
// its share takes that much of the host's RAM; a sim device larger than the
// host can back sends the kernel's OOM killer after the biggest mapper, which
// is vgpud, and every VM loses its GPU. The default therefore fits the host.
#pragma once

#include <cstdint>
#include <string>

namespace vgpu::daemon {

// The default --sim-memory-gib: 16 GiB, or half the host's memory where that
// is less, at least 1 GiB. `host_bytes` 0 (unknown) gives 16.
uint64_t default_sim_memory_gib(uint64_t host_bytes);

// A warning for an explicit size above three quarters of the host's memory;
// empty when it fits (or the host's memory is unknown).
std::string sim_memory_warning(uint64_t gib, uint64_t host_bytes);

// The host's physical memory in bytes (sysconf), 0 if unknown.
uint64_t host_memory_bytes();

}  // namespace vgpu::daemon
