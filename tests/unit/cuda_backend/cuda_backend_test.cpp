// The whole cuda backend without a GPU: vgpud's side, real vgpu-cuda-worker
// processes, and the FAKE driver library as their libcuda.so.1.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <span>

#include "cuda_test_support.h"
#include "vgpu/protocol/device_capabilities.h"
#include "vgpu/protocol/rows.h"

using namespace vgpu;
using namespace vgpu::executor;
using namespace vgpu::test;

TEST_CASE("cuda backend: without a usable driver it says why") {
  std::unique_ptr<Backend> b;
  std::string why;
  CudaConfig c = fake_config();
  c.driver_library = "/nonexistent/libcuda.so.1";
  CHECK(make_cuda_backend(c, &b, &why) == Status::kNoDevice);
  CHECK(why.find("/nonexistent/libcuda.so.1") != std::string::npos);
  CHECK(b == nullptr);

  c = fake_config();
  c.worker_path = "/nonexistent/vgpu-cuda-worker";
  CHECK(make_cuda_backend(c, &b, &why) == Status::kInitializationError);
  CHECK(why == "worker executable /nonexistent/vgpu-cuda-worker not found or not executable");

  c = fake_config();
  c.device = 2;
  CHECK(make_cuda_backend(c, &b, &why) == Status::kInvalidDevice);
  CHECK(why == "device 2 does not exist (the driver sees 1)");
  {
    ScopedEnv none("VGPU_FAKE_CUDA_DEVICES", "0");
    CHECK(make_cuda_backend(fake_config(), &b, &why) == Status::kNoDevice);
  }
  {
    ScopedEnv missing("VGPU_FAKE_CUDA_MISSING", "cuMemAlloc");
    CHECK(make_cuda_backend(fake_config(), &b, &why) == Status::kInsufficientDriver);
    CHECK(why.find("has no entry point cuMemAlloc") != std::string::npos);
  }
  {
    ScopedEnv broken("VGPU_FAKE_CUDA_NO_INIT", "1");
    CHECK(make_cuda_backend(fake_config(), &b, &why) == Status::kNoDevice);
    CHECK(why == "cuInit: CUDA_ERROR_NO_DEVICE");
  }
  c = fake_config();
  c.staging_slot_bytes = 1000;
  CHECK(make_cuda_backend(c, &b, &why) == Status::kInvalidValue);
}

TEST_CASE("cuda backend: the device as the driver reports it, memory as the tenant sees it") {
  ScopedEnv mem("VGPU_FAKE_CUDA_MEMORY_MIB", "64");
  CudaConfig c = fake_config();
  c.device_memory = 48ull << 20;
  FakeGpu gpu(c);
  const DeviceInfo& d = gpu->device();
  CHECK(d.name == "Fake H200 (vgpu tests)");
  CHECK(d.total_memory == 48ull << 20);  // what is shared out, not the whole card
  CHECK(d.driver_version == 13000);
  CHECK(d.attributes[75] == 9);  // compute capability major
  CHECK(d.attributes[16] == 132);  // multiprocessors
  // A GPU's driver evaluates the conditional handles of its own graphs only.
  CHECK((d.attributes[proto::kCapabilitiesAttribute] & proto::kCapGraphConditionals) == 0);
  CHECK(d.attributes[17] == 1);  // kernels have a time limit: the watchdog
  CHECK(d.uuid[0] == 0xf0);

  auto a = gpu.context(1);
  gpu->set_memory_cap(1, 1 << 20);
  uint64_t free = 0, total = 0;
  REQUIRE(gpu->mem_info(a.id, &free, &total) == Status::kSuccess);
  CHECK(total == 1 << 20);
  const uint64_t variables = gpu->tenant_memory(1).used;  // the module's __device__ counter
  CHECK(variables == 256);
  CHECK(free == (1 << 20) - variables);
  uint64_t p = 0, q = 0;
  REQUIRE(gpu->mem_alloc(a.id, 700 * 1024, &p) == Status::kSuccess);
  CHECK(gpu->mem_alloc(a.id, 400 * 1024, &q) == Status::kMemoryAllocation);
  REQUIRE(gpu->mem_info(a.id, &free, &total) == Status::kSuccess);
  CHECK(total == 1 << 20);
  CHECK(free == (1 << 20) - 700 * 1024 - variables);
  CHECK(gpu->tenant_memory(1).used == 700 * 1024 + variables);

  // Another tenant without a cap sees the shared memory, less what is taken.
  auto b = gpu.context(2);
  REQUIRE(gpu->mem_info(b.id, &free, &total) == Status::kSuccess);
  CHECK(total == 48ull << 20);
  CHECK(free == (48ull << 20) - gpu->tenant_memory(1).used - gpu->tenant_memory(2).used);

  REQUIRE(run(*gpu, a.id, Free{p}).status == Status::kSuccess);
  CHECK(gpu->tenant_memory(1).used == variables);
  CHECK(gpu->tenant_memory(1).peak >= 700 * 1024);
  gpu->destroy_context(a.id);
  CHECK(gpu->tenant_memory(1).used == 0);
}

TEST_CASE("cuda backend: copies round-trip in chunks and kernels see their parameters") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  const Handle fill = gpu.function(a, kFill);
  const uint64_t n = 100'000;  // 400 KB: seven 64 KiB chunks each way
  uint64_t p = 0;
  REQUIRE(gpu->mem_alloc(a.id, n * 4, &p) == Status::kSuccess);
  std::vector<int32_t> host(n);
  std::iota(host.begin(), host.end(), 1);
  const auto* src = reinterpret_cast<const uint8_t*>(host.data());
  ExecResult r = run(*gpu, a.id, CopyHtoD{p, src, n * 4});
  REQUIRE(r.status == Status::kSuccess);
  std::vector<int32_t> back(n, 0);
  r = run(*gpu, a.id, CopyDtoH{p, reinterpret_cast<uint8_t*>(back.data()), n * 4});
  REQUIRE(r.status == Status::kSuccess);
  CHECK(back == host);

  r = run(*gpu, a.id, launch(fill, Params{}.at(0, p + 8).at(8, int32_t{-3}).at(12, int32_t{10}).bytes, 1, 32));
  REQUIRE(r.status == Status::kSuccess);
  r = run(*gpu, a.id, CopyDtoH{p, reinterpret_cast<uint8_t*>(back.data()), 64});
  REQUIRE(r.status == Status::kSuccess);
  CHECK(back[1] == 2);
  CHECK(back[2] == -3);
  CHECK(back[11] == -3);
  CHECK(back[12] == 13);

  // Memset and device-to-device copies.
  uint64_t q = 0;
  REQUIRE(gpu->mem_alloc(a.id, 64, &q) == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, Memset{q, 64, 0xab}).status == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, CopyDtoD{p, q, 8}).status == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, CopyDtoH{p, reinterpret_cast<uint8_t*>(back.data()), 12}).status == Status::kSuccess);
  CHECK(static_cast<uint32_t>(back[0]) == 0xabababab);
  CHECK(static_cast<uint32_t>(back[1]) == 0xabababab);
  CHECK(back[2] == -3);
}

namespace {

// A data area as the transport makes one: a file the daemon maps and hands
// the backend (attach_data_area), here two areas' worth, the first attached.
struct AreaFile {
  static constexpr size_t kBytes = 1 << 20;
  int fd = -1;
  uint8_t* base = nullptr;
  AreaFile() {
    fd = memfd_create("vgpu-test-area", MFD_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, 2 * kBytes) == 0);
    void* p = mmap(nullptr, 2 * kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE(p != MAP_FAILED);
    base = static_cast<uint8_t*>(p);
  }
  ~AreaFile() {
    munmap(base, 2 * kBytes);
    if (fd >= 0) close(fd);
  }
  std::span<uint8_t> area() const { return {base, kBytes}; }
};

}  // namespace

TEST_CASE(
    "cuda backend: copies between the registered data area and the device skip the staging area") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  AreaFile file;
  REQUIRE(gpu->attach_data_area(a.id, file.fd, 0, file.area()) == Status::kSuccess);
  CHECK(gpu->attach_data_area(a.id, file.fd, 0, file.area()) == Status::kInvalidValue);  // once
  close(file.fd);  // the backend keeps a copy of its own
  file.fd = -1;
  constexpr uint64_t kCopy = 256 * 1024;  // above what a batch carries
  uint64_t p = 0;
  REQUIRE(gpu->mem_alloc(a.id, kCopy, &p) == Status::kSuccess);
  for (uint64_t i = 0; i < kCopy; ++i) file.base[i] = static_cast<uint8_t>(i * 13 + 1);
  const BackendStats before = gpu->stats();
  REQUIRE(run(*gpu, a.id, CopyHtoD{p, file.base, kCopy}).status == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, CopyDtoH{p, file.base + 2 * kCopy, kCopy}).status == Status::kSuccess);
  CHECK(std::equal(file.base, file.base + kCopy, file.base + 2 * kCopy));
  BackendStats after = gpu->stats();
  CHECK(after.direct_copy_bytes - before.direct_copy_bytes == 2 * kCopy);
  CHECK(after.staged_copy_bytes == before.staged_copy_bytes);

  // Host memory outside the area, or only partly in it, goes through the staging area.
  std::vector<uint8_t> host(kCopy);
  REQUIRE(run(*gpu, a.id, CopyDtoH{p, host.data(), kCopy}).status == Status::kSuccess);
  CHECK(std::equal(host.begin(), host.end(), file.base));
  uint8_t* straddling = file.base + AreaFile::kBytes - kCopy / 2;
  REQUIRE(run(*gpu, a.id, CopyDtoH{p, straddling, kCopy}).status == Status::kSuccess);
  CHECK(std::equal(straddling, straddling + kCopy, file.base));
  const BackendStats outside = gpu->stats();
  CHECK(outside.staged_copy_bytes - after.staged_copy_bytes == 2 * kCopy);
  CHECK(outside.direct_copy_bytes == after.direct_copy_bytes);

  // A context reset into a fresh worker (after a fault) registers it again.
  const Handle fault = gpu.function(a, kFault);
  CHECK(run(*gpu, a.id, launch(fault, Params{}.at(0, uint64_t{16}).bytes)).status ==
        Status::kIllegalAddress);
  REQUIRE(run(*gpu, a.id, Reset{}).status == Status::kSuccess);
  REQUIRE(gpu->mem_alloc(a.id, kCopy, &p) == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, CopyHtoD{p, file.base, kCopy}).status == Status::kSuccess);
  std::fill(host.begin(), host.end(), 0);
  REQUIRE(run(*gpu, a.id, CopyDtoH{p, host.data(), kCopy}).status == Status::kSuccess);
  CHECK(std::equal(host.begin(), host.end(), file.base));
  CHECK(gpu->stats().direct_copy_bytes - outside.direct_copy_bytes == kCopy);
}

TEST_CASE(
    "cuda backend: a data area the driver cannot register leaves copies staged, and working") {
  ScopedEnv no_register("VGPU_FAKE_CUDA_NO_REGISTER", "1");
  FakeGpu gpu;
  auto a = gpu.context(1);
  AreaFile file;
  CHECK(gpu->attach_data_area(a.id, file.fd, 0, file.area()) == Status::kNotSupported);
  constexpr uint64_t kCopy = 256 * 1024;
  uint64_t p = 0;
  REQUIRE(gpu->mem_alloc(a.id, kCopy, &p) == Status::kSuccess);
  for (uint64_t i = 0; i < kCopy; ++i) file.base[i] = static_cast<uint8_t>(i * 7);
  REQUIRE(run(*gpu, a.id, CopyHtoD{p, file.base, kCopy}).status == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, CopyDtoH{p, file.base + kCopy, kCopy}).status == Status::kSuccess);
  CHECK(std::equal(file.base, file.base + kCopy, file.base + kCopy));
  CHECK(gpu->stats().direct_copy_bytes == 0);
  CHECK(gpu->stats().staged_copy_bytes == 2 * kCopy);
}

TEST_CASE("cuda backend: copies of rows land row by row, the gaps untouched, and stay inside the context") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  constexpr uint64_t kWidth = 24, kHeight = 30, kPitch = 40;
  uint64_t p = 0, q = 0;
  REQUIRE(gpu->mem_alloc(a.id, kPitch * kHeight, &p) == Status::kSuccess);
  REQUIRE(gpu->mem_alloc(a.id, kPitch * kHeight, &q) == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, Memset{p, kPitch * kHeight, 0x11}).status == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, Memset{q, kPitch * kHeight, 0x11}).status == Status::kSuccess);
  std::vector<uint8_t> packed(kWidth * kHeight);
  std::iota(packed.begin(), packed.end(), 5);
  REQUIRE(run(*gpu, a.id, CopyRows{proto::kRowsHostToDevice, p, kPitch, 0, kWidth, kWidth, kHeight, packed.data()})
              .status == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, CopyRows{proto::kRowsDeviceToDevice, q, kPitch, p, kPitch, kWidth, kHeight, nullptr})
              .status == Status::kSuccess);
  std::vector<uint8_t> back(kPitch * kHeight, 0);
  REQUIRE(run(*gpu, a.id, CopyDtoH{q, back.data(), back.size()}).status == Status::kSuccess);
  for (uint64_t y = 0; y < kHeight; ++y)
    for (uint64_t x = 0; x < kPitch; ++x) {
      INFO("row " << y << " byte " << x);
      CHECK(back[y * kPitch + x] == (x < kWidth ? packed[y * kWidth + x] : 0x11));
    }
  std::vector<uint8_t> host(64 * kHeight, 0xEE);
  REQUIRE(run(*gpu, a.id, CopyRows{proto::kRowsDeviceToHost, 0, 64, q, kPitch, kWidth, kHeight, host.data()})
              .status == Status::kSuccess);
  for (uint64_t y = 0; y < kHeight; ++y)
    for (uint64_t x = 0; x < 64; ++x) CHECK(host[y * 64 + x] == (x < kWidth ? packed[y * kWidth + x] : 0xEE));
  // One row past the allocation, and another context's memory: refused when queued.
  CHECK(run(*gpu, a.id, CopyRows{proto::kRowsDeviceToDevice, q, kPitch, p, kPitch, kWidth, kHeight + 1, nullptr})
            .status == Status::kInvalidValue);
  auto b = gpu.context(2);
  uint64_t theirs = 0;
  REQUIRE(gpu->mem_alloc(b.id, kPitch * kHeight, &theirs) == Status::kSuccess);
  if (theirs != p && theirs != q) {  // two processes may, rarely, get the same address
    CHECK(run(*gpu, a.id, CopyRows{proto::kRowsDeviceToDevice, q, kPitch, theirs, kPitch, kWidth, 2, nullptr})
              .status == Status::kInvalidValue);
  }
}

TEST_CASE("cuda backend: every handle and pointer is checked against the context's own tables") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  auto b = gpu.context(2);
  const Handle fill_a = gpu.function(a, kFill);
  uint64_t p = 0;
  REQUIRE(gpu->mem_alloc(a.id, 4096, &p) == Status::kSuccess);
  uint8_t buf[16] = {};
  // Past the end, straddling, and another context's pointer: refused when queued.
  CHECK(run(*gpu, a.id, CopyHtoD{p + 4090, buf, 16}).status == Status::kInvalidValue);
  CHECK(run(*gpu, a.id, CopyDtoH{p - 1, buf, 2}).status == Status::kInvalidValue);
  uint64_t own_b = 0;
  REQUIRE(gpu->mem_alloc(b.id, 4096, &own_b) == Status::kSuccess);
  if (own_b != p) {  // two processes may, rarely, get the same address for their own memory
    CHECK(run(*gpu, b.id, CopyDtoH{p, buf, 16}).status == Status::kInvalidValue);
    CHECK(run(*gpu, b.id, Free{p}).status == Status::kInvalidValue);
  }
  // Another context's function, module, event, stream.
  CHECK(run(*gpu, b.id, launch(fill_a, std::vector<uint8_t>(16))).status == Status::kInvalidResourceHandle);
  Handle fn = 0;
  FunctionInfo info;
  CHECK(gpu->function_get(b.id, a.module, kFill, &fn, &info) == Status::kInvalidResourceHandle);
  Handle ev = 0, st = 0;
  REQUIRE(gpu->event_create(a.id, 0, &ev) == Status::kSuccess);
  REQUIRE(gpu->stream_create(a.id, 0, 0, &st) == Status::kSuccess);
  CHECK(run(*gpu, b.id, RecordEvent{ev}).status == Status::kInvalidResourceHandle);
  CHECK(run(*gpu, b.id, Synchronize{}, st).status == Status::kInvalidResourceHandle);
  // A launch's parameters must have the kernel's exact size.
  CHECK(run(*gpu, a.id, launch(fill_a, std::vector<uint8_t>(12))).status == Status::kInvalidValue);
  const uint32_t huge = 4096;
  CHECK(run(*gpu, a.id, launch(fill_a, std::vector<uint8_t>(16), 1, huge)).status ==
        Status::kInvalidConfiguration);
  // A kernel the module does not have; a second free.
  CHECK(gpu->function_get(a.id, a.module, "_Z7missingv", &fn, &info) == Status::kInvalidDeviceFunction);
  REQUIRE(run(*gpu, a.id, Free{p}).status == Status::kSuccess);
  CHECK(run(*gpu, a.id, Free{p}).status == Status::kInvalidValue);
  // A fat binary that is not one.
  Handle m = 0;
  const std::vector<uint8_t> junk(64, 0x42);
  CHECK(gpu->module_load(a.id, junk, &m) == Status::kInvalidKernelImage);
}

TEST_CASE("cuda backend: texture objects over the context's own memory, as the driver's") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  auto b = gpu.context(2);
  const Handle tex_read = gpu.function(a, kTexRead);
  // A 5 x 3 float 2D array as the guest lays it out: rows padded to 32 bytes.
  TextureDesc d;
  d.resource = TextureDesc::Resource::kArray;
  d.format = TextureDesc::Format::kFloat;
  d.width = 5;
  d.height = 3;
  REQUIRE(row_pitch(d) == 32);
  uint64_t array = 0, out = 0;
  REQUIRE(gpu->mem_alloc(a.id, resource_bytes(d), &array) == Status::kSuccess);
  REQUIRE(gpu->mem_alloc(a.id, 4, &out) == Status::kSuccess);
  float rows[3][8] = {};
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x) rows[y][x] = static_cast<float>(y * 10 + x);
  REQUIRE(run(*gpu, a.id, CopyHtoD{array, reinterpret_cast<const uint8_t*>(rows), sizeof rows}).status ==
          Status::kSuccess);
  d.base = array;
  Handle tex = 0;
  REQUIRE(gpu->texture_create(a.id, d, &tex) == Status::kSuccess);
  // The kernel takes the driver's handle and reads the texel through it.
  REQUIRE(run(*gpu, a.id, launch(tex_read, Params{}.at(0, tex).at(8, int32_t{4}).at(12, int32_t{2}).at(16, out).bytes))
              .status == Status::kSuccess);
  float got = 0;
  REQUIRE(run(*gpu, a.id, CopyDtoH{out, reinterpret_cast<uint8_t*>(&got), 4}).status == Status::kSuccess);
  CHECK(got == 24.0f);

  // Linear memory too; another context's memory, and what needs the
  // driver's own arrays (3D, layered, surfaces), are not.
  TextureDesc linear;
  linear.resource = TextureDesc::Resource::kLinear;
  linear.base = out;
  linear.width = 1;
  Handle lt = 0;
  CHECK(gpu->texture_create(a.id, linear, &lt) == Status::kSuccess);
  CHECK(gpu->texture_create(b.id, d, &lt) == Status::kInvalidValue);
  TextureDesc cube = d;
  cube.depth = 2;
  CHECK(gpu->texture_create(a.id, cube, &lt) == Status::kNotSupported);
  TextureDesc surface = d;
  surface.object = TextureDesc::Object::kSurface;
  surface.array_flags = TextureDesc::kSurfaceLoadStore;
  CHECK(gpu->texture_create(a.id, surface, &lt) == Status::kNotSupported);

  // Destroyed once, and only by its own context.
  CHECK(run(*gpu, b.id, DestroyTexture{tex}).status == Status::kInvalidResourceHandle);
  CHECK(run(*gpu, a.id, DestroyTexture{tex}).status == Status::kSuccess);
  CHECK(run(*gpu, a.id, DestroyTexture{tex}).status == Status::kInvalidResourceHandle);
}

TEST_CASE("cuda backend: what kernels print is kept for their own context's program") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  auto b = gpu.context(2);
  const Handle say = gpu.function(a, kSay);
  auto take = [&](ContextId ctx, int stream) {
    std::vector<uint8_t> buf(4096);
    uint64_t bytes = 0, dropped = 0;
    REQUIRE(gpu->take_device_output(ctx, stream, buf, &bytes, &dropped) == Status::kSuccess);
    CHECK(dropped == 0);
    return std::string(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(bytes));
  };
  // The (fake) driver writes a kernel's printf to the worker's stdout when it
  // synchronizes, as a GPU's does; the backend keeps it for the context.
  REQUIRE(run(*gpu, a.id, launch(say, Params{}.at(0, int32_t{7}).bytes, 1, 2)).status == Status::kSuccess);
  CHECK(take(a.id, 1) == "say 7 thread 0\nsay 7 thread 1\n");
  CHECK(take(a.id, 1).empty());  // taken once
  CHECK(take(a.id, 2).empty());
  CHECK(take(b.id, 1).empty());  // never another context's
  REQUIRE(run(*gpu, a.id, launch(say, Params{}.at(0, int32_t{8}).bytes, 1, 1)).status == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, launch(say, Params{}.at(0, int32_t{9}).bytes, 1, 1)).status == Status::kSuccess);
  CHECK(take(a.id, 1) == "say 8 thread 0\nsay 9 thread 0\n");  // in order, nothing twice
  std::vector<uint8_t> buf(16);
  uint64_t bytes = 0, dropped = 0;
  CHECK(gpu->take_device_output(a.id, 3, buf, &bytes, &dropped) == Status::kInvalidValue);
}

TEST_CASE("cuda backend: the device heap's size is the driver's, charged to the tenant, and fixed once used") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  const uint64_t before = gpu->tenant_memory(1).used;  // the module's variables
  REQUIRE(run(*gpu, a.id, SetHeapSize{32ull << 20}).status == Status::kSuccess);
  CHECK(gpu->tenant_memory(1).used == before + (24ull << 20));  // above CUDA's default 8 MiB
  REQUIRE(run(*gpu, a.id, SetHeapSize{16ull << 20}).status == Status::kSuccess);
  CHECK(gpu->tenant_memory(1).used == before + (8ull << 20));  // a smaller heap gives bytes back
  gpu->set_memory_cap(1, before + (16ull << 20));
  CHECK(run(*gpu, a.id, SetHeapSize{64ull << 20}).status == Status::kMemoryAllocation);
  CHECK(gpu->tenant_memory(1).used == before + (8ull << 20));  // nothing charged
  gpu->set_memory_cap(1, 0);
  // A kernel uses the heap: the driver refuses another size from then on
  // (the fake, as a GPU's), and the bytes reserved for it go back.
  REQUIRE(run(*gpu, a.id, launch(gpu.function(a, kUseHeap), Params{}.at(0, int32_t{64}).bytes)).status ==
          Status::kSuccess);
  CHECK(run(*gpu, a.id, SetHeapSize{32ull << 20}).status == Status::kInvalidValue);
  CHECK(gpu->tenant_memory(1).used == before + (8ull << 20));
  CHECK(run(*gpu, a.id, SetHeapSize{16ull << 20}).status == Status::kSuccess);  // the size it has
  gpu.context(2);
  CHECK(gpu->tenant_memory(2).used < (1u << 20));  // another tenant's heap is its own default
  gpu->destroy_context(a.id);
  CHECK(gpu->tenant_memory(1).used == 0);
}

TEST_CASE("cuda backend: kernels are timed with events; guest events time what ran between") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  const Handle spin = gpu.function(a, kSpin);
  const ExecResult r = run(*gpu, a.id, launch(spin, Params{}.at(0, uint64_t{30'000'000}).bytes));
  REQUIRE(r.status == Status::kSuccess);
  CHECK(r.gpu_ns >= 29'000'000);
  CHECK(r.gpu_ns < 3'000'000'000);

  Handle start = 0, end = 0, untimed = 0;
  REQUIRE(gpu->event_create(a.id, 0, &start) == Status::kSuccess);
  REQUIRE(gpu->event_create(a.id, 0, &end) == Status::kSuccess);
  REQUIRE(gpu->event_create(a.id, 0x2, &untimed) == Status::kSuccess);
  int64_t ns = 0;
  CHECK(gpu->event_elapsed(a.id, start, end, &ns) == Status::kInvalidResourceHandle);  // not recorded
  Work rec{a.id, kDefaultStream, RecordEvent{start}};
  REQUIRE(gpu->accept(rec) == Status::kSuccess);
  CHECK(gpu->event_query(a.id, start) == Status::kNotReady);  // queued, not run
  CHECK(gpu->event_elapsed(a.id, start, end, &ns) == Status::kNotReady);
  REQUIRE(gpu->execute(rec).status == Status::kSuccess);
  CHECK(gpu->event_query(a.id, start) == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, launch(spin, Params{}.at(0, uint64_t{20'000'000}).bytes)).status == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, RecordEvent{end}).status == Status::kSuccess);
  REQUIRE(gpu->event_elapsed(a.id, start, end, &ns) == Status::kSuccess);
  CHECK(ns >= 19'000'000);
  REQUIRE(run(*gpu, a.id, RecordEvent{untimed}).status == Status::kSuccess);
  CHECK(gpu->event_elapsed(a.id, start, untimed, &ns) == Status::kInvalidResourceHandle);
  REQUIRE(run(*gpu, a.id, DestroyEvent{end}).status == Status::kSuccess);
  CHECK(gpu->event_query(a.id, end) == Status::kInvalidResourceHandle);

  // Streams are bookkeeping: work on them runs in order; a pending stream says so.
  Handle s = 0;
  REQUIRE(gpu->stream_create(a.id, 1, -100, &s) == Status::kSuccess);
  Work w{a.id, s, Synchronize{}};
  REQUIRE(gpu->accept(w) == Status::kSuccess);
  CHECK(gpu->stream_query(a.id, s) == Status::kNotReady);
  gpu->discard(w);
  CHECK(gpu->stream_query(a.id, s) == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, DestroyStream{s}, s).status == Status::kSuccess);
  CHECK(gpu->stream_query(a.id, s) == Status::kInvalidResourceHandle);
}

TEST_CASE("cuda backend: module variables, attributes, unload") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  uint64_t var = 0;
  REQUIRE(gpu->var_get(a.id, a.module, "counter", 4, &var) == Status::kSuccess);
  uint64_t again = 0;
  REQUIRE(gpu->var_get(a.id, a.module, "counter", 0, &again) == Status::kSuccess);
  CHECK(again == var);
  CHECK(gpu->var_get(a.id, a.module, "counter", 8, &again) == Status::kInvalidValue);
  CHECK(gpu->var_get(a.id, a.module, "nothing", 4, &again) == Status::kInvalidSymbol);
  int32_t value = 0;
  REQUIRE(run(*gpu, a.id, CopyDtoH{var, reinterpret_cast<uint8_t*>(&value), 4}).status == Status::kSuccess);
  CHECK(value == 7);
  const Handle bump = gpu.function(a, kBump);
  REQUIRE(run(*gpu, a.id, launch(bump, Params{}.at(0, int32_t{35}).bytes)).status == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, CopyDtoH{var, reinterpret_cast<uint8_t*>(&value), 4}).status == Status::kSuccess);
  CHECK(value == 42);

  FunctionAttributes attrs;
  REQUIRE(gpu->func_attributes(a.id, bump, &attrs) == Status::kSuccess);
  CHECK(attrs.max_threads_per_block == 1024);
  CHECK(attrs.num_regs == 16);

  // A healthy reset: memory and events go, variables start over, handles stay.
  uint64_t p = 0;
  REQUIRE(gpu->mem_alloc(a.id, 1000, &p) == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, Reset{}).status == Status::kSuccess);
  CHECK(run(*gpu, a.id, Free{p}).status == Status::kInvalidValue);
  REQUIRE(run(*gpu, a.id, CopyDtoH{var, reinterpret_cast<uint8_t*>(&value), 4}).status == Status::kSuccess);
  CHECK(value == 7);
  CHECK(gpu->tenant_memory(1).used == 256);  // the variable only

  REQUIRE(run(*gpu, a.id, UnloadModule{a.module}).status == Status::kSuccess);
  CHECK(run(*gpu, a.id, launch(bump, Params{}.at(0, int32_t{1}).bytes)).status ==
        Status::kInvalidResourceHandle);
  CHECK(run(*gpu, a.id, CopyDtoH{var, reinterpret_cast<uint8_t*>(&value), 4}).status == Status::kInvalidValue);
  CHECK(gpu->tenant_memory(1).used == 0);
}

TEST_CASE("cuda backend: a kernel whose layout the driver reads differently is refused") {
  ScopedEnv skew("VGPU_FAKE_CUDA_SKEW", "fill");
  FakeGpu gpu;
  auto a = gpu.context(1);
  Handle fn = 0;
  FunctionInfo info;
  CHECK(gpu->function_get(a.id, a.module, kFill, &fn, &info) == Status::kInvalidKernelImage);
  CHECK(gpu->function_get(a.id, a.module, kSpin, &fn, &info) == Status::kSuccess);
  CHECK(info.param_bytes == 8);
}

TEST_CASE("cuda backend: each context is a worker process of its own") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  auto b = gpu.context(1);  // a second process of the same tenant
  auto c = gpu.context(2);
  uint64_t pa = 0, pb = 0, pc = 0;
  REQUIRE(gpu->mem_alloc(a.id, 4096, &pa) == Status::kSuccess);
  REQUIRE(gpu->mem_alloc(b.id, 4096, &pb) == Status::kSuccess);
  REQUIRE(gpu->mem_alloc(c.id, 4096, &pc) == Status::kSuccess);
  CHECK(gpu->tenant_memory(1).used == 2 * (4096 + 256));
  // Destroying one context leaves the others working.
  gpu->destroy_context(b.id);
  CHECK(gpu->tenant_memory(1).used == 4096 + 256);
  uint64_t word = 0x1122334455667788ull, back = 0;
  REQUIRE(run(*gpu, a.id, CopyHtoD{pa, reinterpret_cast<uint8_t*>(&word), 8}).status == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, CopyDtoH{pa, reinterpret_cast<uint8_t*>(&back), 8}).status == Status::kSuccess);
  CHECK(back == word);
  CHECK(gpu->mem_alloc(b.id, 16, &pb) == Status::kInvalidResourceHandle);
}
