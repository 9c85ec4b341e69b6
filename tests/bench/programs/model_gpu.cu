// model_gpu MODE ...: what gpu_model_bench runs through vgpu against the FAKE
// driver's modeled GPU (tests/unit/cuda_backend/fake_driver). The kernel
// `work` does nothing on a real GPU; the fake driver gives each launch of it
// its argument's nanoseconds of modeled device time.
//   stream NS COUNT      COUNT launches of work(NS) back to back, then one
//                        synchronize: result kernels_per_s (modeled-time
//                        kernels completed per wall second)
//   busy NS SECONDS      the same, in rounds of 1000, until SECONDS have passed
//                        (a busy VM next to others); result kernels
//   streams NS ROUNDS    ROUNDS times: work(NS) on one stream and a memset on
//                        another (the fake gives each its copy cost), then one
//                        synchronize: result rounds_per_s (they overlap
//                        where guest streams reach the GPU as streams)
//   latency COUNT        COUNT times: work(0), synchronize; result
//                        latency_us_{median,p90,p99,min}; and where it goes
//                        (medians): launch_call_us (the launch call returns),
//                        sync_after_launch_us (then the synchronize), and
//                        empty_sync_us (a synchronize right after, with
//                        nothing to wait for)
#include <cstdlib>
#include <string>

#include "bench_program.h"

extern "C" __global__ void work(unsigned long long ns) { (void)ns; }

namespace {

void stream(unsigned long long ns, long count) {
  work<<<1, 1>>>(ns);  // the module loads, the worker is warm
  BP_OK(cudaDeviceSynchronize());
  const double t0 = bp::now_ns();
  for (long i = 0; i < count; ++i) work<<<1, 1>>>(ns);
  BP_OK(cudaGetLastError());
  BP_OK(cudaDeviceSynchronize());
  const double t1 = bp::now_ns();
  bp::result("kernels_per_s", static_cast<double>(count) * 1e9 / (t1 - t0));
}

void busy(unsigned long long ns, long seconds) {
  const double end = bp::now_ns() + static_cast<double>(seconds) * 1e9;
  long kernels = 0;
  while (bp::now_ns() < end) {
    for (int i = 0; i < 1000; ++i) work<<<1, 1>>>(ns);
    BP_OK(cudaDeviceSynchronize());
    if (kernels == 0) {
      std::printf("running\n");  // the benchmark's window opens once every VM says so
      std::fflush(stdout);
    }
    kernels += 1000;
  }
  bp::result("kernels", static_cast<double>(kernels));
}

void streams(unsigned long long ns, long rounds) {
  cudaStream_t a = nullptr, b = nullptr;
  BP_OK(cudaStreamCreate(&a));
  BP_OK(cudaStreamCreate(&b));
  void* p = nullptr;
  BP_OK(cudaMalloc(&p, 4096));
  work<<<1, 1, 0, a>>>(ns);
  BP_OK(cudaMemsetAsync(p, 0, 4096, b));
  BP_OK(cudaDeviceSynchronize());
  const double t0 = bp::now_ns();
  for (long i = 0; i < rounds; ++i) {
    work<<<1, 1, 0, a>>>(ns);
    BP_OK(cudaMemsetAsync(p, static_cast<int>(i & 0xff), 4096, b));
  }
  BP_OK(cudaGetLastError());
  BP_OK(cudaDeviceSynchronize());
  const double t1 = bp::now_ns();
  // The last memset is what the buffer holds (the fake's memory is real).
  unsigned char back[4096];
  BP_OK(cudaMemcpy(back, p, sizeof back, cudaMemcpyDeviceToHost));
  for (unsigned char c : back) {
    if (c != static_cast<unsigned char>((rounds - 1) & 0xff)) {
      std::printf("the buffer holds %d, not the last memset's %ld\n", c, (rounds - 1) & 0xff);
      std::exit(1);
    }
  }
  bp::result("rounds_per_s", static_cast<double>(rounds) * 1e9 / (t1 - t0));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void latency(long count) {
  std::vector<double> us, call, after, empty;
  for (long i = -count / 10 - 1; i < count; ++i) {  // a tenth to warm up
    const double t0 = bp::now_ns();
    work<<<1, 1>>>(0);
    const double t1 = bp::now_ns();
    BP_OK(cudaDeviceSynchronize());
    const double t2 = bp::now_ns();
    BP_OK(cudaDeviceSynchronize());
    const double t3 = bp::now_ns();
    if (i < 0) continue;
    us.push_back((t2 - t0) / 1e3);
    call.push_back((t1 - t0) / 1e3);
    after.push_back((t2 - t1) / 1e3);
    empty.push_back((t3 - t2) / 1e3);
  }
  bp::result("launch_call_us", median(call));
  bp::result("sync_after_launch_us", median(after));
  bp::result("empty_sync_us", median(empty));
  std::sort(us.begin(), us.end());
  bp::result("latency_us_median", us[us.size() / 2]);
  bp::result("latency_us_p90", us[us.size() * 9 / 10]);
  bp::result("latency_us_p99", us[std::min(us.size() - 1, us.size() * 99 / 100)]);
  bp::result("latency_us_min", us.front());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "stream") {
    stream(static_cast<unsigned long long>(bp::arg(argc, argv, 2, 10000)), bp::arg(argc, argv, 3, 20000));
  } else if (mode == "busy") {
    busy(static_cast<unsigned long long>(bp::arg(argc, argv, 2, 50000)), bp::arg(argc, argv, 3, 3));
  } else if (mode == "streams") {
    streams(static_cast<unsigned long long>(bp::arg(argc, argv, 2, 50000)),
            bp::arg(argc, argv, 3, 2000));
  } else if (mode == "latency") {
    latency(bp::arg(argc, argv, 2, 2000));
  } else {
    std::printf(
        "usage: model_gpu stream NS COUNT | busy NS SECONDS | streams NS ROUNDS | latency COUNT\n");
    return 2;
  }
  return 0;
}
