// Faults and the watchdog with the whole cuda backend (real worker processes,
// the FAKE driver): a tenant whose kernel faults or hangs loses its own
// context, gets the error, and starts over with a reset; the others never
// notice.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "cuda_test_support.h"

using namespace vgpu;
using namespace vgpu::executor;
using namespace vgpu::test;
using Clock = std::chrono::steady_clock;

namespace {

// What another tenant does meanwhile: a copy round trip and a kernel.
void still_works(FakeGpu& gpu, const FakeGpu::Ctx& c, uint64_t p) {
  const Handle fill = gpu.function(c, kFill);
  REQUIRE(run(*gpu, c.id, launch(fill, Params{}.at(0, p).at(8, int32_t{5}).at(12, int32_t{4}).bytes, 1, 32))
              .status == Status::kSuccess);
  int32_t back[4] = {};
  REQUIRE(run(*gpu, c.id, CopyDtoH{p, reinterpret_cast<uint8_t*>(back), sizeof back}).status ==
          Status::kSuccess);
  CHECK(back[0] == 5);
  CHECK(back[3] == 5);
}

}  // namespace

TEST_CASE("cuda backend: a faulting kernel costs its own context; a reset gives a fresh one") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  auto b = gpu.context(2);
  const Handle fault = gpu.function(a, kFault);
  const Handle fill_a = gpu.function(a, kFill);
  uint64_t pa = 0, pb = 0, var = 0;
  REQUIRE(gpu->mem_alloc(a.id, 4096, &pa) == Status::kSuccess);
  REQUIRE(gpu->mem_alloc(b.id, 4096, &pb) == Status::kSuccess);
  REQUIRE(gpu->var_get(a.id, a.module, "counter", 4, &var) == Status::kSuccess);
  Handle ev = 0;
  REQUIRE(gpu->event_create(a.id, 0, &ev) == Status::kSuccess);

  const ExecResult r = run(*gpu, a.id, launch(fault, Params{}.at(0, uint64_t{16}).bytes));
  CHECK(r.status == Status::kIllegalAddress);
  // Sticky, as CUDA's: every call says so until a reset.
  uint64_t q = 0;
  CHECK(gpu->mem_alloc(a.id, 16, &q) == Status::kIllegalAddress);
  CHECK(run(*gpu, a.id, Synchronize{}).status == Status::kIllegalAddress);
  uint64_t free = 0, total = 0;
  CHECK(gpu->mem_info(a.id, &free, &total) == Status::kIllegalAddress);
  CHECK(gpu->tenant_memory(1).used == 0);  // its memory went with its worker
  // The other tenant never notices.
  still_works(gpu, b, pb);

  REQUIRE(run(*gpu, a.id, Reset{}).status == Status::kSuccess);
  // The guest's module and function handles still work; memory starts empty.
  CHECK(run(*gpu, a.id, Free{pa}).status == Status::kInvalidValue);
  CHECK(gpu->event_query(a.id, ev) == Status::kInvalidResourceHandle);
  REQUIRE(gpu->mem_alloc(a.id, 4096, &pa) == Status::kSuccess);
  REQUIRE(run(*gpu, a.id, launch(fill_a, Params{}.at(0, pa).at(8, int32_t{9}).at(12, int32_t{2}).bytes, 1, 32))
              .status == Status::kSuccess);
  int32_t back[2] = {};
  REQUIRE(run(*gpu, a.id, CopyDtoH{pa, reinterpret_cast<uint8_t*>(back), 8}).status == Status::kSuccess);
  CHECK(back[1] == 9);
  // Its variable is back, with its initial value (wherever the new worker put it).
  uint64_t var2 = 0;
  REQUIRE(gpu->var_get(a.id, a.module, "counter", 4, &var2) == Status::kSuccess);
  int32_t value = 0;
  REQUIRE(run(*gpu, a.id, CopyDtoH{var2, reinterpret_cast<uint8_t*>(&value), 4}).status == Status::kSuccess);
  CHECK(value == 7);
  CHECK(gpu->tenant_memory(1).used == 4096 + 256);
}

TEST_CASE("cuda backend: a trap is sticky too; a worker that crashes costs only its context") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  auto b = gpu.context(2);
  uint64_t pb = 0;
  REQUIRE(gpu->mem_alloc(b.id, 64, &pb) == Status::kSuccess);
  CHECK(run(*gpu, a.id, launch(gpu.function(a, kTrap), {})).status == Status::kLaunchFailure);
  REQUIRE(run(*gpu, a.id, Reset{}).status == Status::kSuccess);
  CHECK(run(*gpu, a.id, launch(gpu.function(a, kCrash), {})).status == Status::kLaunchFailure);
  CHECK(run(*gpu, a.id, Synchronize{}).status == Status::kLaunchFailure);
  still_works(gpu, b, pb);
  REQUIRE(run(*gpu, a.id, Reset{}).status == Status::kSuccess);
  uint64_t p = 0;
  CHECK(gpu->mem_alloc(a.id, 64, &p) == Status::kSuccess);
}

TEST_CASE("cuda backend: the watchdog ends a kernel that runs too long, and only its context") {
  CudaConfig c = fake_config();
  c.watchdog = std::chrono::milliseconds(500);
  FakeGpu gpu(c);
  auto a = gpu.context(1);
  auto b = gpu.context(2);
  uint64_t pb = 0;
  REQUIRE(gpu->mem_alloc(b.id, 64, &pb) == Status::kSuccess);
  const Handle hang = gpu.function(a, kHang);

  const auto start = Clock::now();
  const ExecResult r = run(*gpu, a.id, launch(hang, Params{}.at(0, uint64_t{0}).bytes));
  const auto took = Clock::now() - start;
  CHECK(r.status == Status::kLaunchTimeout);
  CHECK(took >= std::chrono::milliseconds(500));
  CHECK(took < std::chrono::milliseconds(5000));
  CHECK(r.gpu_ns >= 500'000'000);  // charged for the time it held the GPU
  CHECK(run(*gpu, a.id, Synchronize{}).status == Status::kLaunchTimeout);
  still_works(gpu, b, pb);

  // A kernel that stays inside the limit is fine.
  REQUIRE(run(*gpu, a.id, Reset{}).status == Status::kSuccess);
  const Handle spin = gpu.function(a, kSpin);
  CHECK(run(*gpu, a.id, launch(spin, Params{}.at(0, uint64_t{100'000'000}).bytes)).status ==
        Status::kSuccess);
  CHECK(run(*gpu, a.id, launch(spin, Params{}.at(0, uint64_t{1'000'000'000}).bytes)).status ==
        Status::kLaunchTimeout);
}

TEST_CASE("cuda backend: queued work that is discarded leaves things as they were") {
  FakeGpu gpu;
  auto a = gpu.context(1);
  uint64_t p = 0;
  REQUIRE(gpu->mem_alloc(a.id, 64, &p) == Status::kSuccess);
  Work free_it{a.id, kDefaultStream, Free{p}};
  REQUIRE(gpu->accept(free_it) == Status::kSuccess);
  CHECK(run(*gpu, a.id, Free{p}).status == Status::kInvalidValue);  // already on its way out
  gpu->discard(free_it);
  uint8_t byte = 1;
  CHECK(run(*gpu, a.id, CopyHtoD{p, &byte, 1}).status == Status::kSuccess);
  CHECK(run(*gpu, a.id, Free{p}).status == Status::kSuccess);
}

TEST_CASE("cuda backend: contexts come from started workers, and more start as needed") {
  CudaConfig c = fake_config();
  c.spare_workers = 0;  // each started on demand
  FakeGpu gpu(c);
  std::vector<FakeGpu::Ctx> contexts;
  for (TenantId t = 1; t <= 4; ++t) contexts.push_back(gpu.context(t));
  for (const auto& ctx : contexts) {
    uint64_t p = 0;
    CHECK(gpu->mem_alloc(ctx.id, 128, &p) == Status::kSuccess);
  }
  for (const auto& ctx : contexts) gpu->destroy_context(ctx.id);
  for (TenantId t = 1; t <= 4; ++t) CHECK(gpu->tenant_memory(t).used == 0);
}

TEST_CASE("cuda backend: a worker that cannot start fails the context, not the daemon") {
  CudaConfig c = fake_config();
  c.spare_workers = 0;
  FakeGpu gpu(c);
  ContextId id = 0;
  {
    // From now on a new worker finds a driver without cuMemAlloc.
    ScopedEnv broken("VGPU_FAKE_CUDA_MISSING", "cuMemAlloc");
    CHECK(gpu->create_context(1, &id) == Status::kInitializationError);
  }
  // The next one starts fine.
  REQUIRE(gpu->create_context(1, &id) == Status::kSuccess);
  uint64_t p = 0;
  CHECK(gpu->mem_alloc(id, 64, &p) == Status::kSuccess);
}
