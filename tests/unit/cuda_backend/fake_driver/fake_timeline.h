// FAKE CUDA DRIVER, for tests only: its modeled GPU (see fake_cuda.h). No
// device thread: work is placed on a timeline of steady_clock ns when it is
// issued, and waits sleep until the time the timeline says it ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fake_cuda.h"
#include "vgpu/fatbin/fatbin.h"

namespace vgpu::test::fake_cuda::timeline {

enum class Engine { kCompute, kCopy };

uint64_t now_ns();

// Reads the costs and the device file: VGPU_FAKE_CUDA_KERNEL_NS, _BLOCK_NS,
// _COPY_NS, _COPY_GBPS (GB/s, i.e. bytes per ns), _DEVICE_FILE.
void knobs_from_env(Knobs* k);

// Points shared_device() at knobs.device_file (mapped, never zeroed: other
// processes share it) or at this process's own device (zeroed).
void reset(const Knobs& knobs);

// Places work of cost_ns on `engine` after the stream's and the engine's last
// work (and not before now); moves both to its end, which it returns. The
// caller serializes calls on one stream (the fake's state mutex).
uint64_t issue(Engine engine, uint64_t* stream_until, uint64_t cost_ns);

// Returns once steady_clock reaches ns: sleeps to ~100 us before, then spins
// (benchmarks measure microseconds).
void wait_until(uint64_t ns);

// Modeled cost of a launch of k with these packed parameters: a `work` kernel
// costs its own first parameter, any other kernel_ns + blocks * block_ns.
uint64_t kernel_cost(const Knobs& knobs, const fatbin::Kernel& k, const std::vector<uint8_t>& params,
                     uint64_t blocks);
// copy_ns + bytes / copy_bytes_per_ns (the rate 0: copy_ns alone).
uint64_t copy_cost(const Knobs& knobs, size_t bytes);

}  // namespace vgpu::test::fake_cuda::timeline
