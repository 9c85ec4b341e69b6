// The host's GPUs as one backend (host/gpu_set.h), over real sim backends of
// different sizes: a VM's first context places it, its calls go to that
// GPU, it keeps the GPU while it has contexts, and a cap that fits no GPU
// is refused.
#include <catch2/catch.hpp>

#include <map>

#include "vgpu/executor/sim_backend.h"
#include "vgpu/host/gpu_set.h"

using namespace vgpu;
using namespace vgpu::host;

namespace {

constexpr uint64_t kGiB = 1ull << 30;

std::unique_ptr<GpuSet> make_set(std::vector<uint64_t> gib, PlacementPolicy policy,
                                 const std::map<executor::TenantId, double>* weights = nullptr) {
  std::vector<std::unique_ptr<executor::Backend>> gpus;
  for (size_t i = 0; i < gib.size(); ++i) {
    executor::SimConfig c;
    c.device_memory = gib[i] * kGiB;
    c.device_index = static_cast<uint32_t>(i);
    c.worker_path = VGPU_SIM_WORKER;
    std::unique_ptr<executor::Backend> b;
    REQUIRE(executor::make_sim_backend(c, &b) == Status::kSuccess);
    gpus.push_back(std::move(b));
  }
  return std::make_unique<GpuSet>(std::move(gpus), policy, [weights](executor::TenantId t) {
    return weights && weights->count(t) ? weights->at(t) : 1.0;
  });
}

uint64_t total_of(GpuSet& set, executor::ContextId ctx) {
  uint64_t free = 0, total = 0;
  REQUIRE(set.mem_info(ctx, &free, &total) == Status::kSuccess);
  return total;
}

}  // namespace

TEST_CASE("gpu set: spread puts VMs on the least loaded GPU, and calls reach that GPU") {
  auto set = make_set({1, 2, 3}, PlacementPolicy::kSpread);
  // Equal weights: the most free memory first.
  executor::ContextId a = 0, b = 0, c = 0, d = 0;
  REQUIRE(set->create_context(1, &a) == Status::kSuccess);
  REQUIRE(set->create_context(2, &b) == Status::kSuccess);
  REQUIRE(set->create_context(3, &c) == Status::kSuccess);
  CHECK(set->gpu_of(a) == 2);
  CHECK(set->gpu_of(b) == 1);
  CHECK(set->gpu_of(c) == 0);
  CHECK(set->gpu_of_tenant(3) == std::optional<size_t>(0));
  // Each context's calls land on its own GPU: the memory it reports, and
  // the device its process is told about (the n-th sim GPU's UUID ends in n + 1).
  CHECK(total_of(*set, a) == 3 * kGiB);
  CHECK(set->device_of(a).uuid[15] == 3);
  CHECK(set->device_of(c).uuid[15] == 1);
  CHECK(set->device_of(a).total_memory == 3 * kGiB);
  CHECK(total_of(*set, c) == 1 * kGiB);
  uint64_t dptr = 0;
  REQUIRE(set->mem_alloc(c, 4096, &dptr) == Status::kSuccess);
  CHECK(set->context_bytes(c) >= 4096);
  CHECK(set->gpu(0).context_bytes(c) >= 4096);
  CHECK(set->gpu(2).context_bytes(c) == 0);
  // A second context of a VM joins the first on its GPU.
  REQUIRE(set->create_context(3, &d) == Status::kSuccess);
  CHECK(set->gpu_of(d) == 0);
  const std::vector<GpuLoad> loads = set->loads();
  CHECK(loads[0].committed_weight == 1.0);   // one VM, two contexts
  CHECK(loads[0].committed_memory >= 4096);  // uncapped: what it holds
  // Stats add up over the GPUs; a VM appears once.
  const executor::BackendStats stats = set->stats();
  CHECK(stats.contexts == 4);
  CHECK(stats.tenants.size() == 3);
  for (auto ctx : {a, b, c, d}) set->destroy_context(ctx);
  CHECK_FALSE(set->gpu_of_tenant(3).has_value());
  CHECK(set->stats().contexts == 0);
}

TEST_CASE("gpu set: spread weighs VMs by their scheduling weight") {
  std::map<executor::TenantId, double> weights = {{1, 4}, {2, 1}, {3, 1}};
  auto set = make_set({2, 2}, PlacementPolicy::kSpread, &weights);
  executor::ContextId a = 0, b = 0, c = 0;
  REQUIRE(set->create_context(1, &a) == Status::kSuccess);  // weight 4 on GPU 0
  REQUIRE(set->create_context(2, &b) == Status::kSuccess);
  REQUIRE(set->create_context(3, &c) == Status::kSuccess);
  CHECK(set->gpu_of(a) == 0);
  CHECK(set->gpu_of(b) == 1);
  CHECK(set->gpu_of(c) == 1);  // 1 < 4 on GPU 0
}

TEST_CASE(
    "gpu set: pack fills a GPU by the VMs' caps before the next, and refuses a cap no GPU fits") {
  auto set = make_set({2, 2}, PlacementPolicy::kPack);
  for (executor::TenantId t = 1; t <= 5; ++t) set->set_memory_cap(t, kGiB);
  std::vector<executor::ContextId> ctx(6);
  for (executor::TenantId t = 1; t <= 4; ++t) {
    REQUIRE(set->create_context(t, &ctx[t]) == Status::kSuccess);
  }
  CHECK(set->gpu_of(ctx[1]) == 0);
  CHECK(set->gpu_of(ctx[2]) == 0);
  CHECK(set->gpu_of(ctx[3]) == 1);
  CHECK(set->gpu_of(ctx[4]) == 1);
  // Both GPUs are committed: a fifth 1 GiB VM fits nowhere.
  executor::ContextId none = 0;
  CHECK(set->create_context(5, &none) == Status::kMemoryAllocation);
  CHECK_FALSE(set->gpu_of_tenant(5).has_value());
  CHECK(set->stats().contexts == 4);
  // A VM that leaves frees its GPU's room; the next one goes there.
  set->destroy_context(ctx[1]);
  REQUIRE(set->create_context(5, &ctx[5]) == Status::kSuccess);
  CHECK(set->gpu_of(ctx[5]) == 0);
  // A cap above every GPU's memory.
  set->set_memory_cap(6, 3 * kGiB);
  CHECK(set->create_context(6, &none) == Status::kMemoryAllocation);
  for (executor::TenantId t = 2; t <= 5; ++t) set->destroy_context(ctx[t]);
}

TEST_CASE("gpu set: a cap larger than every GPU can never fit, and says so") {
  auto set = make_set({1, 2}, PlacementPolicy::kSpread);
  CHECK(set->fits_some_gpu(0).ok());
  CHECK(set->fits_some_gpu(2 * kGiB).ok());
  const Result r = set->fits_some_gpu(3 * kGiB);
  CHECK(r.code() == Result::Code::kUnavailable);
  CHECK_THAT(r.message(), Catch::Contains("3072 MiB") && Catch::Contains("2048 MiB"));
}

TEST_CASE("gpu set: a context no GPU has is refused as unknown") {
  auto set = make_set({1, 1}, PlacementPolicy::kSpread);
  uint64_t dptr = 0;
  CHECK(set->mem_alloc(987654321, 64, &dptr) != Status::kSuccess);
  CHECK(set->context_bytes(987654321) == 0);
}

TEST_CASE("gpu set: a VM's own placement policy wins over the host's") {
  auto set = make_set({2, 2}, PlacementPolicy::kSpread);
  for (executor::TenantId t = 1; t <= 3; ++t) {
    set->set_memory_cap(t, kGiB / 2);
    set->set_tenant_policy(t, PlacementPolicy::kPack);
  }
  std::vector<executor::ContextId> ctx(5);
  for (executor::TenantId t = 1; t <= 3; ++t) {
    REQUIRE(set->create_context(t, &ctx[t]) == Status::kSuccess);
    CHECK(set->gpu_of(ctx[t]) == 0);  // packed: 1.5 of GPU 0's 2 GiB committed
  }
  // Lifted: the host's spread, and GPU 1 is the less loaded.
  set->set_tenant_policy(4, PlacementPolicy::kPack);
  set->set_tenant_policy(4, std::nullopt);
  REQUIRE(set->create_context(4, &ctx[4]) == Status::kSuccess);
  CHECK(set->gpu_of(ctx[4]) == 1);
  for (executor::TenantId t = 1; t <= 4; ++t) set->destroy_context(ctx[t]);
}

TEST_CASE("gpu set: each placement of a VM that had no context is announced, once") {
  auto set = make_set({1, 2}, PlacementPolicy::kSpread);
  std::vector<std::pair<executor::TenantId, size_t>> placed;
  set->set_on_placed([&](executor::TenantId t, size_t gpu) { placed.emplace_back(t, gpu); });
  executor::ContextId a = 0, b = 0;
  REQUIRE(set->create_context(1, &a) == Status::kSuccess);
  REQUIRE(set->create_context(1, &b) == Status::kSuccess);  // it has one: stays, not announced
  CHECK(placed == std::vector<std::pair<executor::TenantId, size_t>>{{1, 1}});
  set->destroy_context(a);
  set->destroy_context(b);
  // Its contexts gone, a bigger VM takes GPU 1; tenant 1 is placed again, on GPU 0.
  set->set_memory_cap(2, 2 * kGiB);
  executor::ContextId c = 0, d = 0;
  REQUIRE(set->create_context(2, &c) == Status::kSuccess);
  REQUIRE(set->create_context(1, &d) == Status::kSuccess);
  CHECK(placed == std::vector<std::pair<executor::TenantId, size_t>>{{1, 1}, {2, 1}, {1, 0}});
  set->destroy_context(c);
  set->destroy_context(d);
}
