// The FAKE driver's timing model (fake_driver/fake_cuda.h), in this process:
// launches return at once, waits last until the modeled end, kernels take
// turns on one compute engine while copies overlap them, the costs' formulas,
// and one modeled device shared by processes through a file. No test sleeps
// to synchronize: the fake's own waits do. Wall-clock upper bounds are loose
// (a loaded machine); modeled times are exact, as long as the leading work
// queued before them has not already ended (it is 50 ms long for that).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "fake_cuda.h"
#include "fake_timeline.h"

namespace fake = vgpu::test::fake_cuda;
using vgpu::executor::cuda::DriverApi;

namespace {

constexpr uint64_t kUs = 1'000, kMs = 1'000'000;
constexpr uint64_t kLead = 50 * kMs;  // queued first, so what follows starts on the timeline, not "now"

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// A context, the fixture module and two streams on a freshly reset fake.
// Without Catch's macros, so a forked child can use it too.
struct Device {
  DriverApi api{};
  std::vector<uint8_t> image = vgpu::test::fixture_fatbin();
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  CUfunction work = nullptr, bump = nullptr, spin = nullptr;
  CUstream a = nullptr, b = nullptr;
  CUresult up = CUDA_ERROR_UNKNOWN;  // the first failure of the set-up

  explicit Device(const fake::Knobs& knobs = {}) {
    fake::reset(knobs);
    fake::install(&api);
    CUdevice dev = 0;
    for (CUresult r : {api.cuInit(0), api.cuDeviceGet(&dev, 0), api.cuDevicePrimaryCtxRetain(&ctx, dev),
                       api.cuCtxSetCurrent(ctx), api.cuModuleLoadData(&module, image.data()),
                       api.cuModuleGetFunction(&work, module, "work"),
                       api.cuModuleGetFunction(&bump, module, vgpu::test::kBump),
                       api.cuModuleGetFunction(&spin, module, vgpu::test::kSpin), api.cuStreamCreate(&a, 0),
                       api.cuStreamCreate(&b, 0)}) {
      if (r != CUDA_SUCCESS) {
        up = r;
        return;
      }
    }
    up = CUDA_SUCCESS;
  }
  ~Device() { fake::reset(); }

  CUresult launch(CUfunction f, CUstream s, uint64_t arg, unsigned gx = 1, unsigned gy = 1, unsigned gz = 1) {
    void* params[] = {&arg};  // work and spin take 8 bytes, bump 4 (the low half)
    return api.cuLaunchKernel(f, gx, gy, gz, 1, 1, 1, 0, s, params, nullptr);
  }
  CUevent record(CUstream s) {
    CUevent e = nullptr;
    if (api.cuEventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return nullptr;
    return api.cuEventRecord(e, s) == CUDA_SUCCESS ? e : nullptr;
  }
  double ms(CUevent start, CUevent end) {
    float f = -1;
    return api.cuEventElapsedTime(&f, start, end) == CUDA_SUCCESS ? f : -1.0;
  }
};

}  // namespace

TEST_CASE("fake timing: launches return at once, waits last until the modeled end") {
  Device d;
  REQUIRE(d.up == CUDA_SUCCESS);
  const uint64_t t0 = now_ns();
  CUevent start = d.record(d.a);
  for (int i = 0; i < 100; ++i) REQUIRE(d.launch(d.work, d.a, 1 * kMs) == CUDA_SUCCESS);
  const uint64_t issued = now_ns() - t0;
  CUevent end = d.record(d.a);
  CHECK(issued < 90 * kMs);  // 100 calls that do not sleep; sleeping, they would take 100 ms
  REQUIRE(d.api.cuCtxSynchronize() == CUDA_SUCCESS);
  CHECK(now_ns() - t0 >= 100 * kMs);
  CHECK(d.ms(start, end) >= 99.0);
  CHECK(d.ms(start, end) < 2000.0);
  CHECK(fake::stats().modeled_kernel_ns == 100 * kMs);
  const fake::SharedDevice& dev = *fake::shared_device();
  CHECK(dev.kernels == 100);
  CHECK(dev.kernel_busy_ns == 100 * kMs);
  CHECK(dev.first_start_ns >= t0);
  CHECK(dev.last_end_ns - dev.first_start_ns >= 100 * kMs);  // more only if the launches fell behind
  CHECK(dev.last_end_ns <= now_ns());

  // Each wait on its own terms: an event, a stream.
  const uint64_t t1 = now_ns();
  REQUIRE(d.launch(d.work, d.a, 20 * kMs) == CUDA_SUCCESS);
  CUevent done = d.record(d.a);
  REQUIRE(d.api.cuEventSynchronize(done) == CUDA_SUCCESS);
  CHECK(now_ns() - t1 >= 20 * kMs);
  const uint64_t t2 = now_ns();
  REQUIRE(d.launch(d.work, d.b, 20 * kMs) == CUDA_SUCCESS);
  REQUIRE(d.api.cuStreamSynchronize(d.b) == CUDA_SUCCESS);
  CHECK(now_ns() - t2 >= 20 * kMs);
}

TEST_CASE("fake timing: events around one work() are its time apart, on any stream") {
  Device d;
  REQUIRE(d.up == CUDA_SUCCESS);
  const uint64_t t0 = now_ns();
  REQUIRE(d.launch(d.work, d.a, kLead) == CUDA_SUCCESS);
  CUevent start = d.record(d.a);
  REQUIRE(d.launch(d.work, d.a, 5 * kMs) == CUDA_SUCCESS);
  CUevent end = d.record(d.a);
  CHECK(d.ms(start, end) == Approx(5.0).epsilon(0.01));
  REQUIRE(d.api.cuEventSynchronize(end) == CUDA_SUCCESS);
  CHECK(now_ns() - t0 >= kLead + 5 * kMs);

  // The null stream and CU_STREAM_LEGACY are one stream.
  REQUIRE(d.launch(d.work, nullptr, kLead) == CUDA_SUCCESS);
  CUevent s2 = d.record(CU_STREAM_LEGACY);
  REQUIRE(d.launch(d.work, CU_STREAM_LEGACY, 5 * kMs) == CUDA_SUCCESS);
  CUevent e2 = d.record(nullptr);
  CHECK(d.ms(s2, e2) == Approx(5.0).epsilon(0.01));
  REQUIRE(d.api.cuStreamSynchronize(nullptr) == CUDA_SUCCESS);
  CHECK(d.ms(start, e2) >= 5.0 + 50.0 + 5.0);
}

TEST_CASE("fake timing: kernels of two streams take turns on the compute engine") {
  Device d;
  REQUIRE(d.up == CUDA_SUCCESS);
  CUevent start = d.record(d.a);
  REQUIRE(d.launch(d.work, d.a, 10 * kMs) == CUDA_SUCCESS);
  REQUIRE(d.launch(d.work, d.b, 10 * kMs) == CUDA_SUCCESS);
  CUevent end_b = d.record(d.b);
  CHECK(d.ms(start, end_b) >= 20.0 - 1e-3);
  REQUIRE(d.api.cuCtxSynchronize() == CUDA_SUCCESS);
  CHECK(fake::shared_device()->kernel_busy_ns == 20 * kMs);
}

TEST_CASE("fake timing: a copy overlaps another stream's kernel; copies take turns") {
  fake::Knobs knobs;
  knobs.copy_ns = 10 * kMs;
  Device d(knobs);
  REQUIRE(d.up == CUDA_SUCCESS);
  CUdeviceptr p = 0;
  REQUIRE(d.api.cuMemAlloc(&p, 4096) == CUDA_SUCCESS);
  std::vector<uint8_t> host(4096, 7);
  CUevent k0 = d.record(d.a);
  REQUIRE(d.launch(d.work, d.a, 200 * kMs) == CUDA_SUCCESS);
  CUevent k1 = d.record(d.a);
  CUevent c0 = d.record(d.b);
  REQUIRE(d.api.cuMemcpyHtoDAsync(p, host.data(), host.size(), d.b) == CUDA_SUCCESS);
  CUevent c1 = d.record(d.b);
  CHECK(d.ms(c0, c1) >= 10.0 - 1e-3);
  CHECK(d.ms(k0, c1) < d.ms(k0, k1));  // the copy ended while the kernel ran
  // A copy on a third stream (the null one) waits for the copy engine.
  REQUIRE(d.api.cuMemcpyDtoHAsync(host.data(), p, host.size(), nullptr) == CUDA_SUCCESS);
  CUevent c2 = d.record(nullptr);
  CHECK(d.ms(c0, c2) >= 20.0 - 1e-3);
  REQUIRE(d.api.cuCtxSynchronize() == CUDA_SUCCESS);
  const fake::SharedDevice& dev = *fake::shared_device();
  CHECK(dev.copies == 2);
  CHECK(dev.copy_busy_ns == 20 * kMs);
  CHECK(dev.kernel_busy_ns == 200 * kMs);
  CHECK(d.api.cuMemFree(p) == CUDA_SUCCESS);
}

TEST_CASE("fake timing: the costs of launches and copies") {
  fake::Knobs knobs;
  knobs.kernel_ns = 1 * kMs;
  knobs.block_ns = 10 * kUs;
  knobs.copy_ns = 200 * kUs;
  knobs.copy_bytes_per_ns = 2.0;  // 2 GB/s
  Device d(knobs);
  REQUIRE(d.up == CUDA_SUCCESS);
  CUdeviceptr p = 0;
  constexpr size_t kBytes = 1 << 20;
  REQUIRE(d.api.cuMemAlloc(&p, 2 * kBytes) == CUDA_SUCCESS);
  std::vector<uint8_t> host(kBytes, 1);

  REQUIRE(d.launch(d.work, d.a, kLead) == CUDA_SUCCESS);  // work() costs its argument, not kernel_ns
  CUevent e0 = d.record(d.a);
  REQUIRE(d.launch(d.bump, d.a, 1, 4, 2, 3) == CUDA_SUCCESS);  // 24 blocks
  CUevent e1 = d.record(d.a);
  CHECK(d.ms(e0, e1) == Approx(1.0 + 24 * 0.010).margin(1e-4));

  const double copy_ms = 0.200 + kBytes / 2.0 / 1e6;
  REQUIRE(d.launch(d.work, d.b, kLead) == CUDA_SUCCESS);
  CUevent c0 = d.record(d.b);
  REQUIRE(d.api.cuMemcpyHtoDAsync(p, host.data(), kBytes, d.b) == CUDA_SUCCESS);
  CUevent c1 = d.record(d.b);
  REQUIRE(d.api.cuMemcpyDtoHAsync(host.data(), p, kBytes, d.b) == CUDA_SUCCESS);
  CUevent c2 = d.record(d.b);
  REQUIRE(d.api.cuMemcpyDtoDAsync(p + kBytes, p, kBytes, d.b) == CUDA_SUCCESS);
  CUevent c3 = d.record(d.b);
  REQUIRE(d.api.cuMemsetD8Async(p, 0, 1000, d.b) == CUDA_SUCCESS);
  CUevent c4 = d.record(d.b);
  CHECK(d.ms(c0, c1) == Approx(copy_ms).margin(1e-4));
  CHECK(d.ms(c1, c2) == Approx(copy_ms).margin(1e-4));
  CHECK(d.ms(c2, c3) == Approx(copy_ms).margin(1e-4));
  CHECK(d.ms(c3, c4) == Approx(0.200 + 0.0005).margin(1e-4));
  REQUIRE(d.api.cuCtxSynchronize() == CUDA_SUCCESS);
  CHECK(fake::stats().modeled_kernel_ns == 2 * kLead + 1 * kMs + 24 * 10 * kUs);
  CHECK(fake::shared_device()->copies == 4);
  CHECK(d.api.cuMemFree(p) == CUDA_SUCCESS);
}

TEST_CASE("fake timing: which kernels are work()") {
  auto kernel = [](const char* name, uint32_t size) {
    vgpu::fatbin::Kernel k;
    k.name = name;
    k.params = {{0, size}};
    k.param_bytes = size;
    return k;
  };
  fake::Knobs knobs;
  knobs.kernel_ns = 7;
  const uint64_t ns = 12345;
  std::vector<uint8_t> params(8);
  std::memcpy(params.data(), &ns, 8);
  using fake::timeline::kernel_cost;
  CHECK(kernel_cost(knobs, kernel("work", 8), params, 1) == ns);              // extern "C"
  CHECK(kernel_cost(knobs, kernel("_Z4worky", 8), params, 1) == ns);          // unsigned long long
  CHECK(kernel_cost(knobs, kernel("_Z7my_workm", 8), params, 1) == ns);       // unsigned long
  CHECK(kernel_cost(knobs, kernel("_ZN3lab4workEy", 8), params, 1) == ns);    // in a namespace
  CHECK(kernel_cost(knobs, kernel("_Z4workx", 8), params, 1) == 7);           // signed
  CHECK(kernel_cost(knobs, kernel("_Z6workerPi", 8), params, 1) == 7);        // a pointer
  CHECK(kernel_cost(knobs, kernel("_Z4worki", 4), params, 1) == 7);           // 4 bytes
  CHECK(kernel_cost(knobs, kernel("_Z4spiny", 8), params, 1) == 7);           // not work
}

TEST_CASE("fake timing: processes share one modeled device through a file") {
  char dir[] = "/tmp/vgpu-fake-timing-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string file = std::string(dir) + "/device";
  fake::Knobs knobs;
  knobs.device_file = file;
  {
    Device d(knobs);
    REQUIRE(d.up == CUDA_SUCCESS);
    fake::SharedDevice* dev = fake::shared_device();
    REQUIRE(dev != nullptr);
    CHECK(dev->kernels == 0);  // a new file is a fresh device
    REQUIRE(d.launch(d.work, d.a, 2 * kMs) == CUDA_SUCCESS);
    REQUIRE(d.api.cuCtxSynchronize() == CUDA_SUCCESS);
    CHECK(dev->kernel_busy_ns == 2 * kMs);
    const uint64_t parent_end = dev->compute_until;

    std::fflush(nullptr);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {  // another worker: its own fake, the same device
      Device child(knobs);
      bool ok = child.up == CUDA_SUCCESS && child.launch(child.work, child.a, 3 * kMs) == CUDA_SUCCESS &&
                child.api.cuCtxSynchronize() == CUDA_SUCCESS && fake::shared_device()->kernels == 2;
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(dev->kernels == 2);
    CHECK(dev->kernel_busy_ns == 5 * kMs);
    CHECK(dev->compute_until >= parent_end + 3 * kMs);
    CHECK(fake::stats().modeled_kernel_ns == 2 * kMs);  // this process's own

    // Reset keeps what the file counted (others share it) ...
    fake::reset(knobs);
    CHECK(fake::shared_device()->kernels == 2);
    // ... and a benchmark maps the file to read it.
    const int fd = open(file.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    void* m = mmap(nullptr, sizeof(fake::SharedDevice), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    REQUIRE(m != MAP_FAILED);
    const auto* seen = static_cast<const fake::SharedDevice*>(m);
    CHECK(seen->kernel_busy_ns == 5 * kMs);
    CHECK(seen->last_end_ns - seen->first_start_ns >= 5 * kMs);
    munmap(m, sizeof(fake::SharedDevice));
  }
  // Without the file, the device is this process's own again, and idle.
  CHECK(fake::shared_device()->kernels == 0);
  CHECK(unlink(file.c_str()) == 0);
  CHECK(rmdir(dir) == 0);
}

TEST_CASE("fake timing: with no costs, work ends as it is issued; spin() still sleeps in the launch") {
  Device d;
  REQUIRE(d.up == CUDA_SUCCESS);
  CUdeviceptr p = 0;
  REQUIRE(d.api.cuMemAlloc(&p, 4096) == CUDA_SUCCESS);
  std::vector<uint8_t> host(4096);
  CUevent e0 = d.record(d.a);
  REQUIRE(d.launch(d.bump, d.a, 1) == CUDA_SUCCESS);
  REQUIRE(d.api.cuMemcpyHtoDAsync(p, host.data(), host.size(), d.a) == CUDA_SUCCESS);
  CUevent e1 = d.record(d.a);
  CHECK(d.ms(e0, e1) >= 0.0);
  CHECK(d.ms(e0, e1) < 100.0);  // only the wall time between the two calls
  REQUIRE(d.api.cuCtxSynchronize() == CUDA_SUCCESS);
  const fake::SharedDevice& dev = *fake::shared_device();
  CHECK(dev.kernels == 1);
  CHECK(dev.copies == 1);
  CHECK(dev.kernel_busy_ns == 0);
  CHECK(dev.first_start_ns == 0);  // no modeled work yet
  CHECK(fake::stats().modeled_kernel_ns == 0);

  const uint64_t t0 = now_ns();
  REQUIRE(d.launch(d.spin, d.a, 20 * kMs) == CUDA_SUCCESS);
  CHECK(now_ns() - t0 >= 20 * kMs);  // slept in the launch call
  CHECK(d.api.cuMemFree(p) == CUDA_SUCCESS);
}

TEST_CASE("fake timing: the knobs from the environment (what a worker's fake reads)") {
  CHECK(fake::knobs_from_env().kernel_ns == 0);
  vgpu::test::ScopedEnv kernel("VGPU_FAKE_CUDA_KERNEL_NS", "1500");
  vgpu::test::ScopedEnv block("VGPU_FAKE_CUDA_BLOCK_NS", "20");
  vgpu::test::ScopedEnv copy("VGPU_FAKE_CUDA_COPY_NS", "3000");
  vgpu::test::ScopedEnv gbps("VGPU_FAKE_CUDA_COPY_GBPS", "12.5");
  vgpu::test::ScopedEnv file("VGPU_FAKE_CUDA_DEVICE_FILE", "/tmp/some-device");
  const fake::Knobs k = fake::knobs_from_env();
  CHECK(k.kernel_ns == 1500);
  CHECK(k.block_ns == 20);
  CHECK(k.copy_ns == 3000);
  CHECK(k.copy_bytes_per_ns == 12.5);
  CHECK(k.device_file == "/tmp/some-device");
}
