// copy_bw [MAX_MIB] [pageable|pinned]: cudaMemcpy bandwidth, host to device
// and device to host, at sizes of 4 KiB to MAX_MIB MiB (default 256), from
// pageable memory (malloc, the default) or pinned memory (cudaMallocHost),
// next to memcpy of the same size between the same two host buffers in this
// same process.
// Each size runs a warm-up copy, then samples for about 0.3 s (at least 5);
// a sample is as many back-to-back copies as make 1 MiB (one copy from
// 1 MiB up), so the clock's own cost does not count. Each figure is the
// median sample's bandwidth in GB/s (10^9 bytes/s). The bytes are checked
// after one round trip at the largest size first.
// Prints h2d_<KiB>, d2h_<KiB> and memcpy_<KiB>.
#include <cstring>

#include "bench_program.h"

namespace {

template <class F>
double median_gbps(uint64_t size, F&& copy) {
  copy();  // warm-up: pages faulted in on both sides
  const uint64_t inner = std::max<uint64_t>(1, (1u << 20) / size);
  // Samples for 0.3 s of wall time (at least 5, at most 2000), however fast
  // the copies are (a Debug build with sanitizers is many times slower).
  std::vector<double> gbps;
  const double start = bp::now_ns();
  while (gbps.size() < 5 || (gbps.size() < 2000 && bp::now_ns() - start < 0.3e9)) {
    const double t0 = bp::now_ns();
    for (uint64_t k = 0; k < inner; ++k) copy();
    gbps.push_back(static_cast<double>(size * inner) / (bp::now_ns() - t0));
  }
  std::sort(gbps.begin(), gbps.end());
  return gbps[gbps.size() / 2];
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
  for (uint64_t size = 4096; size <= max; size *= 4) {
    const double h2d = median_gbps(size, [&] {
      BP_OK(cudaMemcpy(dev, src, size, cudaMemcpyHostToDevice));
    });
    const double d2h = median_gbps(size, [&] {
      BP_OK(cudaMemcpy(dst, dev, size, cudaMemcpyDeviceToHost));
    });
    const double mc = median_gbps(size, [&] { std::memcpy(dst, src, size); });
    std::printf("%10llu %10.2f %10.2f %10.2f\n", static_cast<unsigned long long>(size >> 10), h2d,
                d2h, mc);
    char key[64];
    std::snprintf(key, sizeof key, "h2d_%llu", static_cast<unsigned long long>(size >> 10));
    bp::result(key, h2d);
    std::snprintf(key, sizeof key, "d2h_%llu", static_cast<unsigned long long>(size >> 10));
    bp::result(key, d2h);
    std::snprintf(key, sizeof key, "memcpy_%llu", static_cast<unsigned long long>(size >> 10));
    bp::result(key, mc);
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
