// copy_bw [MAX_MIB] [pageable|pinned]: copy bandwidth, host to device and
// device to host, at sizes of 4 KiB to MAX_MIB MiB (default 256), from
// pageable memory (malloc, the default) or pinned memory (cudaMallocHost),
// next to memcpy of the same size between the same two host buffers in this
// same process.
// The copies are timed the way CUDA's bandwidthTest times them: pinned as
// back-to-back cudaMemcpyAsync on the default stream then one synchronize,
// pageable as cudaMemcpy one after another. For pinned memory the
// synchronous cudaMemcpy is timed too (h2d_sync_, d2h_sync_): each copy then
// also pays one round trip to the host.
// At each size the three timed kinds (h2d, d2h, memcpy) take turns, one
// sample of each per round, for about 0.9 s (at least 5 rounds), so all see
// the same machine. A sample of cudaMemcpyAsync is as many back-to-back
// copies as make 32 MiB (at least 4), as bandwidthTest times 100 copies:
// the one synchronize, and the host threads waking for the first copy,
// weigh little; a sample of cudaMemcpy is as many as make 1 MiB (one copy
// from 1 MiB up), so the clock's own cost does not count. The memcpy sample
// is as large as the one it is compared with. The synchronous pinned figures
// are sampled after, one kind at a time, for 0.3 s each. Each figure is the
// median sample's bandwidth in GB/s (10^9 bytes/s). The bytes are checked
// after one round trip at the largest size first, and at each size the
// device memory is cleared before the timed copies and read back after.
// Pageable copies are also compared with what two copies of every byte can
// reach here, pipelined by two threads of this process with no vgpu in
// between (two_thread_pipeline.h), sampled in turn with the others.
// Prints h2d_<KiB>, d2h_<KiB>, memcpy_<KiB> (and, pinned, h2d_sync_<KiB>,
// d2h_sync_<KiB>; pageable, pipeline_<KiB>).
#include <cstring>
#include <functional>
#include <memory>
#include <utility>

#include "bench_program.h"
#include "two_thread_pipeline.h"

namespace {

// One kind of copy to time: a sample is `copies` calls of `copy`, then
// `finish` (inside the timing).
struct Kind {
  explicit Kind(std::function<void()> c, std::function<void()> f = [] {})
      : copy(std::move(c)), finish(std::move(f)) {}
  std::function<void()> copy;
  std::function<void()> finish;
  std::vector<double> gbps;  // one per sample
};

double median(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Samples the kinds in turn, one sample of each per round, for `seconds` of
// wall time (at least 5 rounds, at most 2000), however fast the copies are (a
// Debug build with sanitizers is many times slower). Taking turns gives every
// kind the same machine: on a shared host a core's memory bandwidth drifts
// by a quarter from one second to the next.
void sample_in_turn(uint64_t size, uint64_t copies, double seconds, std::vector<Kind*> kinds) {
  for (Kind* k : kinds) {  // warm-up: pages faulted in on both sides
    k->copy();
    k->finish();
  }
  const double start = bp::now_ns();
  for (size_t round = 0; round < 5 || (round < 2000 && bp::now_ns() - start < seconds * 1e9);
       ++round) {
    for (Kind* k : kinds) {
      const double t0 = bp::now_ns();
      for (uint64_t i = 0; i < copies; ++i) k->copy();
      k->finish();
      k->gbps.push_back(static_cast<double>(size * copies) / (bp::now_ns() - t0));
    }
  }
}

uint64_t one_mib_of(uint64_t size) { return std::max<uint64_t>(1, (1u << 20) / size); }
uint64_t batch_of(uint64_t size) { return std::max<uint64_t>(4, (32u << 20) / size); }

void record(const char* what, uint64_t size, double gbps) {
  char key[64];
  std::snprintf(key, sizeof key, "%s_%llu", what, static_cast<unsigned long long>(size >> 10));
  bp::result(key, gbps);
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t max = static_cast<uint64_t>(bp::arg(argc, argv, 1, 256)) << 20;
  const bool pinned = argc > 2 && !std::strcmp(argv[2], "pinned");
  uint8_t *src = nullptr, *dst = nullptr;
  if (pinned) {
    BP_OK(cudaMallocHost(reinterpret_cast<void**>(&src), max));
    BP_OK(cudaMallocHost(reinterpret_cast<void**>(&dst), max));
  } else {
    src = static_cast<uint8_t*>(std::malloc(max));
    dst = static_cast<uint8_t*>(std::malloc(max));
  }
  for (uint64_t i = 0; i < max; ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  std::memset(dst, 0, max);
  void* dev = nullptr;
  BP_OK(cudaMalloc(&dev, max));

  // One round trip at the largest size: what went in comes back.
  BP_OK(cudaMemcpy(dev, src, max, cudaMemcpyHostToDevice));
  BP_OK(cudaMemcpy(dst, dev, max, cudaMemcpyDeviceToHost));
  if (std::memcmp(src, dst, max) != 0) {
    std::printf("error: bytes changed on the way\n");
    return 1;
  }
  std::printf("%10s %10s %10s %10s\n", "KiB", "h2d GB/s", "d2h GB/s", "memcpy");
  const auto synchronize = [] { BP_OK(cudaStreamSynchronize(0)); };
  std::unique_ptr<bp::TwoThreadPipeline> pipeline;
  if (!pinned) pipeline = std::make_unique<bp::TwoThreadPipeline>(max);
  for (uint64_t size = 4096; size <= max; size *= 4) {
    const auto h2d_sync = [&] { BP_OK(cudaMemcpy(dev, src, size, cudaMemcpyHostToDevice)); };
    const auto d2h_sync = [&] { BP_OK(cudaMemcpy(dst, dev, size, cudaMemcpyDeviceToHost)); };
    BP_OK(cudaMemset(dev, 0, size));  // the copies timed must fill it again
    Kind h2d(h2d_sync), d2h(d2h_sync), mc([&] { std::memcpy(dst, src, size); });
    if (pinned) {
      h2d = Kind([&] { BP_OK(cudaMemcpyAsync(dev, src, size, cudaMemcpyHostToDevice, 0)); },
                 synchronize);
      d2h = Kind([&] { BP_OK(cudaMemcpyAsync(dst, dev, size, cudaMemcpyDeviceToHost, 0)); },
                 synchronize);
    }
    // Synchronous copies each end in a round trip: 1 MiB of them makes a
    // sample. Asynchronous ones share one: 32 MiB of them.
    if (pinned) {
      sample_in_turn(size, batch_of(size), 0.9, {&h2d, &d2h, &mc});
    } else {
      Kind pipe([&] { pipeline->copy(dst, src, size); });
      sample_in_turn(size, one_mib_of(size), 0.9, {&h2d, &d2h, &mc, &pipe});
      record("pipeline", size, median(pipe.gbps));
    }
    // The device memory holds what the timed h2d copies wrote; one more copy
    // the timed way brings it back into a cleared buffer.
    std::memset(dst, 0, size);
    d2h.copy();
    d2h.finish();
    if (std::memcmp(src, dst, size) != 0) {
      std::printf("error: bytes changed on the way at %llu KiB\n",
                  static_cast<unsigned long long>(size >> 10));
      return 1;
    }
    if (pinned) {
      Kind h2d_s(h2d_sync), d2h_s(d2h_sync);
      sample_in_turn(size, one_mib_of(size), 0.3, {&h2d_s});
      sample_in_turn(size, one_mib_of(size), 0.3, {&d2h_s});
      record("h2d_sync", size, median(h2d_s.gbps));
      record("d2h_sync", size, median(d2h_s.gbps));
    }
    const double h2d_gbps = median(h2d.gbps), d2h_gbps = median(d2h.gbps), mc_gbps = median(mc.gbps);
    std::printf("%10llu %10.2f %10.2f %10.2f\n", static_cast<unsigned long long>(size >> 10),
                h2d_gbps, d2h_gbps, mc_gbps);
    record("h2d", size, h2d_gbps);
    record("d2h", size, d2h_gbps);
    record("memcpy", size, mc_gbps);
  }
  BP_OK(cudaFree(dev));
  if (pinned) {
    BP_OK(cudaFreeHost(src));
    BP_OK(cudaFreeHost(dst));
  } else {
    std::free(src);
    std::free(dst);
  }
  return 0;
}
