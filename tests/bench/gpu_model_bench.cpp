// The cuda backend's GPU path measured without a GPU: against the FAKE
// driver's modeled GPU (tests/unit/cuda_backend/fake_driver: kernels take
// modeled time on a device timeline shared by every worker process). The
// same work runs directly on the fake driver, in this process ("direct":
// cuLaunchKernel in a loop, then cuCtxSynchronize), and through vgpu (the
// model_gpu program, built with nvcc, through vgpu-run, vgpud --backend cuda
// whose workers load the fake driver), side by side in one run:
//   stream 10 us / 2 us   back-to-back launches: forwarded kernels per second
//                         / direct (targets >= 0.90 and >= 0.60)
//   busy                  four VMs launching 50 us kernels, 2 ms slices: the
//                         modeled GPU's busy share of a window (target >= 0.95)
//   two streams           a 50 us kernel on one stream beside a 50 us memset on
//                         another, rounds per second / direct (no target: the
//                         streams overlap only where they reach the GPU as
//                         streams; depth 1 is one item at a time)
//   latency               launch + synchronize of an empty kernel: what vgpu
//                         adds over direct, median/p90/p99 (target: median <= 15 us)
// Each through-vgpu figure is given at --overlap-depth 1 (one launch on the
// GPU at a time: the old path) and at the default depth.
//
//   gpu_model_bench [--quick]
// Exit status 0 when every program ran through vgpu and every target is met
// (under --quick: a smoke run, when every program ran).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "fake_cuda.h"
#include "support/stats.h"
#include "support/vgpud.h"

namespace {

using vgpu::bench::Vgpud;
using vgpu::test::fake_cuda::SharedDevice;

double now_ns() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The fake driver in this process, as a program would load libcuda.so.1.
struct Direct {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*set_current)(CUcontext) = nullptr;
  CUresult (*load)(CUmodule*, const void*) = nullptr;
  CUresult (*get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*synchronize)() = nullptr;
  CUresult (*stream_create)(CUstream*, unsigned) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*memset_async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  CUfunction work = nullptr;
  std::vector<uint8_t> image;

  bool open(const char* library, const char* fatbin) {
    void* h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!h) return false;
    using Lookup = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    auto lookup = reinterpret_cast<Lookup>(dlsym(h, "cuGetProcAddress_v2"));
    if (!lookup) return false;
    auto get = [&](const char* name, auto* fn) {
      void* p = nullptr;
      lookup(name, &p, 13000, 0, nullptr);
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(p);
      return p != nullptr;
    };
    if (!get("cuInit", &init) || !get("cuDeviceGet", &device_get) ||
        !get("cuDevicePrimaryCtxRetain", &retain) || !get("cuCtxSetCurrent", &set_current) ||
        !get("cuModuleLoadData", &load) || !get("cuModuleGetFunction", &get_function) ||
        !get("cuLaunchKernel", &launch) || !get("cuCtxSynchronize", &synchronize) ||
        !get("cuStreamCreate", &stream_create) || !get("cuMemAlloc", &mem_alloc) ||
        !get("cuMemsetD8Async", &memset_async)) {
      return false;
    }
    std::ifstream in(fatbin, std::ios::binary);
    image.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    CUmodule module = nullptr;
    return init(0) == CUDA_SUCCESS && device_get(&dev, 0) == CUDA_SUCCESS &&
           retain(&ctx, dev) == CUDA_SUCCESS && set_current(ctx) == CUDA_SUCCESS &&
           !image.empty() && load(&module, image.data()) == CUDA_SUCCESS &&
           get_function(&work, module, "work") == CUDA_SUCCESS;
  }
  void work_for(unsigned long long ns, CUstream on = nullptr) {
    void* params[] = {&ns};
    launch(work, 1, 1, 1, 1, 1, 1, 0, on, params, nullptr);
  }
  // As model_gpu's streams mode: rounds per second.
  double two_streams(unsigned long long ns, long rounds) {
    CUstream a = nullptr, b = nullptr;
    CUdeviceptr p = 0;
    if (stream_create(&a, 0) != CUDA_SUCCESS || stream_create(&b, 0) != CUDA_SUCCESS ||
        mem_alloc(&p, 4096) != CUDA_SUCCESS) {
      return 0;
    }
    synchronize();
    const double t0 = now_ns();
    for (long i = 0; i < rounds; ++i) {
      work_for(ns, a);
      memset_async(p, static_cast<unsigned char>(i), 4096, b);
    }
    synchronize();
    return static_cast<double>(rounds) * 1e9 / (now_ns() - t0);
  }
  double stream(unsigned long long ns, long count) {
    work_for(ns);
    synchronize();
    const double t0 = now_ns();
    for (long i = 0; i < count; ++i) work_for(ns);
    synchronize();
    return static_cast<double>(count) * 1e9 / (now_ns() - t0);
  }
  std::vector<double> latency(long count) {
    std::vector<double> us;
    for (long i = 0; i < count; ++i) {
      const double t0 = now_ns();
      work_for(0);
      synchronize();
      us.push_back((now_ns() - t0) / 1e3);
    }
    std::sort(us.begin(), us.end());
    return us;
  }
};

double at(const std::vector<double>& sorted, double q) {
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * static_cast<double>(sorted.size())))];
}

// The shared modeled device the workers' fake drivers use.
class DeviceFile {
 public:
  explicit DeviceFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0) return;
    if (ftruncate(fd, sizeof(SharedDevice)) == 0) {
      void* p = mmap(nullptr, sizeof(SharedDevice), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) device_ = static_cast<SharedDevice*>(p);
    }
    ::close(fd);
  }
  ~DeviceFile() {
    if (device_) munmap(device_, sizeof(SharedDevice));
  }
  uint64_t busy_ns() const { return device_ ? device_->kernel_busy_ns.load() : 0; }

 private:
  SharedDevice* device_ = nullptr;
};

struct Through {
  double stream10 = 0, stream2 = 0, busy = 0, streams = 0;
  std::vector<double> latency;  // median, p90, p99
  double launch_call = 0, sync_after_launch = 0, empty_sync = 0;  // medians, us
};

Through through_vgpu(const std::string& dir, uint32_t depth, bool quick) {
  Through t;
  const std::string device = dir + "/device-depth" + std::to_string(depth);
  setenv("VGPU_FAKE_CUDA_DEVICE_FILE", device.c_str(), 1);
  DeviceFile shared(device);
  Vgpud vgpud({"--backend", "cuda", "--overlap-depth", std::to_string(depth)});
  if (!vgpud.ok()) return t;
  const std::string program = vgpu::bench::bench_program("model_gpu");
  const long count = quick ? 2000 : 20000;
  t.stream10 = vgpud.run("vm1", program, {"stream", "10000", std::to_string(count)})["kernels_per_s"];
  t.stream2 = vgpud.run("vm1", program, {"stream", "2000", std::to_string(count)})["kernels_per_s"];
  t.streams =
      vgpud.run("vm1", program, {"streams", "50000", quick ? "200" : "2000"})["rounds_per_s"];
  auto lat = vgpud.run("vm1", program, {"latency", quick ? "200" : "2000"});
  t.latency = {lat["latency_us_median"], lat["latency_us_p90"], lat["latency_us_p99"]};
  t.launch_call = lat["launch_call_us"];
  t.sync_after_launch = lat["sync_after_launch_us"];
  t.empty_sync = lat["empty_sync_us"];

  // Four busy VMs; the window starts once all are running and ends before any stops.
  const int seconds = quick ? 4 : 6;
  std::vector<pid_t> vms;
  for (int i = 1; i <= 4; ++i) {
    vms.push_back(vgpud.start("busy" + std::to_string(i), program,
                              {"busy", "50000", std::to_string(seconds)}));
  }
  // The window opens once every VM has run its first round (said "running").
  auto all_running = [&] {
    for (int i = 1; i <= 4; ++i) {
      if (vgpud.output_of("busy" + std::to_string(i)).find("running") == std::string::npos) return false;
    }
    return true;
  };
  for (int i = 0; i < 6000 && !all_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const uint64_t b0 = shared.busy_ns();
  const double w0 = now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(quick ? 1000 : 3000));  // the window itself
  const uint64_t b1 = shared.busy_ns();
  const double w1 = now_ns();
  for (pid_t p : vms) vgpu::bench::wait_exit(p, std::chrono::seconds(120));
  t.busy = static_cast<double>(b1 - b0) / (w1 - w0);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && !std::strcmp(argv[1], "--quick");
  if (argc > 2 || (argc == 2 && !quick)) {
    std::fprintf(stderr, "usage: gpu_model_bench [--quick]\n");
    return 2;
  }
  std::printf("the cuda backend against the FAKE driver's modeled GPU%s\n", quick ? " (quick)" : "");
  std::printf("%s\n\n", vgpu::bench::machine_line().c_str());
  vgpu::bench::TempDir dir("vgpu-model-bench");
  setenv("VGPU_CUDA_DRIVER", VGPU_BENCH_FAKE_LIBCUDA, 1);
  setenv("VGPU_FAKE_CUDA_DEVICE_FILE", (dir.path() + "/device-direct").c_str(), 1);
  setenv("VGPU_FAKE_CUDA_COPY_NS", "50000", 1);  // each memset of the two-stream figure: 50 us

  Direct direct;
  if (!direct.open(VGPU_BENCH_FAKE_LIBCUDA, VGPU_BENCH_FAKE_FATBIN)) {
    std::fprintf(stderr, "cannot drive the fake driver directly (%s)\n", VGPU_BENCH_FAKE_LIBCUDA);
    return 1;
  }
  const long count = quick ? 2000 : 20000;
  const double d10 = direct.stream(10000, count), d2 = direct.stream(2000, count);
  const std::vector<double> dlat = direct.latency(quick ? 200 : 2000);
  const double dstreams = direct.two_streams(50000, quick ? 200 : 2000);

  const Through one = through_vgpu(dir.path(), 1, quick);
  const Through deep = through_vgpu(dir.path(), 4, quick);

  std::printf("%-34s %12s %12s %12s %9s\n", "", "direct", "depth 1", "depth 4", "4 / direct");
  std::printf("%-34s %12.0f %12.0f %12.0f %8.2fx  (target >= 0.90)\n", "stream 10 us kernels (per s)",
              d10, one.stream10, deep.stream10, deep.stream10 / d10);
  std::printf("%-34s %12.0f %12.0f %12.0f %8.2fx  (target >= 0.60)\n", "stream 2 us kernels (per s)", d2,
              one.stream2, deep.stream2, deep.stream2 / d2);
  std::printf("%-34s %12.0f %12.0f %12.0f %8.2fx  (one stream: %.0f)\n",
              "two streams 50+50 us (rounds/s)", dstreams, one.streams, deep.streams,
              deep.streams / dstreams, 1e9 / 100000);
  std::printf("%-34s %12s %11.1f%% %11.1f%%            (target >= 95%%)\n",
              "4 busy VMs, 50 us: GPU busy", "-", one.busy * 100, deep.busy * 100);
  const char* names[] = {"median", "p90", "p99"};
  const double qs[] = {0.5, 0.9, 0.99};
  bool latency_ok = false;
  for (int i = 0; i < 3; ++i) {
    const double direct_us = at(dlat, qs[i]);
    const double added = deep.latency.size() > 2 ? deep.latency[i] - direct_us : -1;
    std::printf("launch+sync latency %-14s %10.1fus %10.1fus %10.1fus  +%.1f us%s\n", names[i], direct_us,
                one.latency.size() > 2 ? one.latency[i] : -1.0, deep.latency.size() > 2 ? deep.latency[i] : -1.0,
                added, i == 0 ? "  (target: median <= +15 us)" : "");
    if (i == 0) latency_ok = added >= 0 && added <= 15;
  }
  // Where it goes: the guest's launch call (queued, not waited for); a
  // synchronize with nothing to run (guest -> vgpud -> dispatcher -> guest);
  // and what the launch itself adds to the synchronize after it (the
  // dispatcher -> worker -> GPU -> worker -> dispatcher trip).
  for (const auto* t : {&one, &deep}) {
    std::printf("  depth %d, medians: launch call %.1f us + synchronize %.1f us = empty synchronize %.1f us"
                " + the launch's trip to the worker %.1f us\n",
                t == &one ? 1 : 4, t->launch_call, t->sync_after_launch, t->empty_sync,
                t->sync_after_launch - t->empty_sync);
  }
  const bool met = deep.stream10 >= 0.9 * d10 && deep.stream2 >= 0.6 * d2 && deep.busy >= 0.95 &&
                   latency_ok;
  std::printf("\ntargets %s\n", met ? "met" : "NOT met");
  // Every program ran to its end (a failed one leaves its figure 0): what
  // the quick run checks.
  bool ran = true;
  for (const Through* t : {&one, &deep}) {
    ran = ran && t->stream10 > 0 && t->stream2 > 0 && t->streams > 0 && t->latency.size() > 2 &&
          t->latency[0] > 0 && t->busy > 0;
  }
  if (!ran) std::printf("a program through vgpu failed\n");
  return ran && (quick || met) ? 0 : 1;
}
