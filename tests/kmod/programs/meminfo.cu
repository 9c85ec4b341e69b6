// meminfo: the VM's device memory as cudaMemGetInfo reports it (the tenant's
// view: every process of the VM counts), and the call's round-trip time.
//   meminfo released [SECONDS]  PASS once nothing is allocated (free == total),
//                               polling up to SECONDS (default 15)
//   meminfo held MIB            PASS if at least MIB MiB are allocated (by any
//                               process of the VM)
//   meminfo rtt COUNT           COUNT cudaMemGetInfo calls; prints
//                               "rtt_us <mean> min_us <fastest>", then PASS
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common.h"

using Clock = std::chrono::steady_clock;

static int released(double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  size_t free_bytes = 0, total = 0;
  for (;;) {
    CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
    if (free_bytes == total) break;
    if (Clock::now() > end)
      vt::fail("%zu bytes still allocated after %.0f s", total - free_bytes, seconds);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  vt::check(true, "nothing allocated: free == total == %zu MiB", total >> 20);
  vt::pass();
}

static int held(unsigned long mib) {
  size_t free_bytes = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
  vt::check(total - free_bytes >= (mib << 20), "%zu MiB allocated in this VM (at least %lu)",
            (total - free_bytes) >> 20, mib);
  vt::pass();
}

static int rtt(unsigned long count) {
  size_t free_bytes = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total));  // connects
  double sum = 0, best = 1e30;
  for (unsigned long i = 0; i < count; ++i) {
    const auto t0 = Clock::now();
    CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    sum += us;
    best = us < best ? us : best;
  }
  std::printf("rtt_us %.1f min_us %.1f calls %lu\n", sum / static_cast<double>(count), best, count);
  vt::pass();
}

int main(int argc, char** argv) {
  vt::set_name("meminfo");
  if (argc >= 2 && std::strcmp(argv[1], "released") == 0)
    return released(argc == 3 ? std::strtod(argv[2], nullptr) : 15.0);
  if (argc == 3 && std::strcmp(argv[1], "held") == 0)
    return held(std::strtoul(argv[2], nullptr, 10));
  if (argc == 3 && std::strcmp(argv[1], "rtt") == 0) {
    const unsigned long n = std::strtoul(argv[2], nullptr, 10);
    if (n > 0 && n <= 1000000) return rtt(n);
  }
  vt::fail("usage: meminfo released [SECONDS] | meminfo held MIB | meminfo rtt COUNT");
}
