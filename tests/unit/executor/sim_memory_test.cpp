// The sim backend's device memory: allocation, copies, validation of every
// pointer and length, per-tenant caps, and release at destroy.
#include <numeric>

#include "sim_test_support.h"
#include "vgpu/protocol/device_capabilities.h"

using namespace vgpu;
using namespace vgpu::executor;
using namespace vgpu::executor::test;

namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), seed);
  return v;
}

}  // namespace

TEST_CASE("sim: the device looks like an sm_90 GPU") {
  auto b = make_backend();
  CHECK(b->name() == "sim");
  CHECK(b->device().name == "vgpu sim");
  CHECK(b->device().total_memory == (1ull << 30));
  CHECK(b->device().attributes[75] == 9);  // cudaDevAttrComputeCapabilityMajor
  CHECK(b->device().attributes[76] == 0);
  CHECK(b->device().attributes[1] == 1024);  // cudaDevAttrMaxThreadsPerBlock
  CHECK(b->device().attributes[16] > 0);     // cudaDevAttrMultiProcessorCount
  // Plug-ins set graph conditionals (vgpu_sim_graph_set_conditional).
  CHECK(b->device().attributes[proto::kCapabilitiesAttribute] & proto::kCapGraphConditionals);
}

TEST_CASE("sim: the worker is found next to the executable by default") {
  SimConfig c = test_config();
  c.worker_path.clear();  // this test binary and the worker are both built into bin/
  std::unique_ptr<Backend> b;
  CHECK(make_sim_backend(c, &b) == Status::kSuccess);
}

TEST_CASE("sim: a bad configuration is refused") {
  std::unique_ptr<Backend> b;
  SimConfig c = test_config();
  c.worker_path = "/nonexistent/vgpu-sim-worker";
  CHECK(make_sim_backend(c, &b) == Status::kInitializationError);
  c = test_config();
  c.plugin_paths.push_back("/nonexistent/plugin.so");
  CHECK(make_sim_backend(c, &b) == Status::kInitializationError);
  c = test_config();
  c.plugin_paths.push_back(VGPU_SIM_FUTURE_ABI_PLUGIN);  // needs VGPU_SIM_ABI + 1
  CHECK(make_sim_backend(c, &b) == Status::kInitializationError);
  c = test_config();
  c.device_memory = 0;
  CHECK(make_sim_backend(c, &b) == Status::kInvalidValue);
  CHECK_FALSE(b);
}

TEST_CASE("sim: allocations are aligned and each context has its own address range") {
  auto b = make_backend();
  const ContextId c1 = new_context(*b, 1);
  const ContextId c2 = new_context(*b, 1);
  const uint64_t p1 = alloc(*b, c1, 10);
  const uint64_t p2 = alloc(*b, c1, 1000);
  const uint64_t q1 = alloc(*b, c2, 10);
  CHECK(p1 % 256 == 0);
  CHECK(p2 % 256 == 0);
  CHECK(p1 != p2);
  CHECK(p1 >= kSimSlotRegionBase);
  const uint64_t slot = sim_slot_bytes(test_config());
  CHECK((q1 > p1 ? q1 - p1 : p1 - q1) >= slot);

  uint64_t p = 1;
  CHECK(b->mem_alloc(c1, 0, &p) == Status::kSuccess);  // like cudaMalloc(&p, 0)
  CHECK(p == 0);
  CHECK(run(*b, c1, Free{0}).status == Status::kSuccess);
  CHECK(b->mem_alloc(c1, 1, nullptr) == Status::kInvalidValue);
  CHECK(b->mem_alloc(9999, 1, &p) == Status::kInvalidResourceHandle);
}

TEST_CASE("sim: H2D, D2H, D2D and memset round trip") {
  auto b = make_backend();
  const ContextId ctx = new_context(*b, 1);
  const size_t n = 100000;
  const uint64_t a = alloc(*b, ctx, n);
  const uint64_t c = alloc(*b, ctx, n);
  const auto data = pattern(n, 7);
  REQUIRE(put(*b, ctx, a, data.data(), n) == Status::kSuccess);
  CHECK(read(*b, ctx, a, n) == data);

  const ExecResult d2d = run(*b, ctx, CopyDtoD{c, a, n});
  REQUIRE(d2d.status == Status::kSuccess);
  CHECK(d2d.gpu_ns > 0);
  CHECK(read(*b, ctx, c, n) == data);

  REQUIRE(run(*b, ctx, Memset{c + 10, 20, 0xAB}).status == Status::kSuccess);
  auto expect = data;
  std::fill(expect.begin() + 10, expect.begin() + 30, 0xAB);
  CHECK(read(*b, ctx, c, n) == expect);

  // Interior pointers and partial ranges are fine while inside the allocation.
  std::vector<uint8_t> tail(16);
  REQUIRE(get(*b, ctx, tail.data(), a + n - 16, 16) == Status::kSuccess);
  CHECK(std::equal(tail.begin(), tail.end(), data.end() - 16));
  CHECK(run(*b, ctx, CopyHtoD{a, nullptr, 0}).status == Status::kSuccess);  // 0 bytes
}

TEST_CASE("sim: a range outside one live allocation of the context is refused, nothing touched") {
  auto b = make_backend();
  const ContextId ctx = new_context(*b, 1);
  const ContextId same_tenant = new_context(*b, 1);
  const ContextId other_tenant = new_context(*b, 2);
  const uint64_t a = alloc(*b, ctx, 1000);
  const uint64_t next = alloc(*b, ctx, 1000);  // right after a's slack
  const uint64_t mine = alloc(*b, same_tenant, 64);
  const uint64_t theirs = alloc(*b, other_tenant, 64);
  const auto pa = pattern(1000, 1), pn = pattern(1000, 50), pm = pattern(64, 9),
             pt = pattern(64, 200);
  REQUIRE(put(*b, ctx, a, pa.data(), 1000) == Status::kSuccess);
  REQUIRE(put(*b, ctx, next, pn.data(), 1000) == Status::kSuccess);
  REQUIRE(put(*b, same_tenant, mine, pm.data(), 64) == Status::kSuccess);
  REQUIRE(put(*b, other_tenant, theirs, pt.data(), 64) == Status::kSuccess);

  std::vector<uint8_t> junk(4096, 0x55);
  std::vector<uint8_t> out(4096, 0x11);
  const auto untouched_out = out;

  SECTION("length past the end") {
    CHECK(put(*b, ctx, a, junk.data(), 1001) == Status::kInvalidValue);
    CHECK(put(*b, ctx, a + 999, junk.data(), 2) == Status::kInvalidValue);
    CHECK(put(*b, ctx, a, junk.data(), next - a + 10) == Status::kInvalidValue);  // spans two
    CHECK(get(*b, ctx, out.data(), a + 500, 501) == Status::kInvalidValue);
    CHECK(run(*b, ctx, Memset{a + 1, 1000, 0}).status == Status::kInvalidValue);
    CHECK(run(*b, ctx, CopyDtoD{next, a, 1001}).status == Status::kInvalidValue);
    CHECK(run(*b, ctx, CopyDtoD{a + 1, next, 1000}).status == Status::kInvalidValue);
    CHECK(put(*b, ctx, a + 8, junk.data(), UINT64_MAX) == Status::kInvalidValue);
  }
  SECTION("pointers that were never allocated") {
    CHECK(put(*b, ctx, 0, junk.data(), 1) == Status::kInvalidValue);
    CHECK(put(*b, ctx, a - 256, junk.data(), 1) == Status::kInvalidValue);
    CHECK(put(*b, ctx, a + 1000, junk.data(), 1) == Status::kInvalidValue);  // alignment slack
    CHECK(get(*b, ctx, out.data(), 0x1234, 4) == Status::kInvalidValue);
    CHECK(run(*b, ctx, Free{a + 256}).status == Status::kInvalidValue);  // interior pointer
  }
  SECTION("another context's pointer, same tenant or not") {
    CHECK(put(*b, ctx, mine, junk.data(), 1) == Status::kInvalidValue);
    CHECK(get(*b, ctx, out.data(), mine, 1) == Status::kInvalidValue);
    CHECK(put(*b, ctx, theirs, junk.data(), 64) == Status::kInvalidValue);
    CHECK(run(*b, ctx, Memset{theirs, 64, 0}).status == Status::kInvalidValue);
    CHECK(run(*b, ctx, CopyDtoD{a, theirs, 64}).status == Status::kInvalidValue);
    CHECK(run(*b, ctx, CopyDtoD{theirs, a, 64}).status == Status::kInvalidValue);
    CHECK(run(*b, ctx, Free{theirs}).status == Status::kInvalidValue);
  }
  SECTION("freed memory, and a double free") {
    const uint64_t gone = alloc(*b, ctx, 256);
    REQUIRE(run(*b, ctx, Free{gone}).status == Status::kSuccess);
    CHECK(put(*b, ctx, gone, junk.data(), 1) == Status::kInvalidValue);
    CHECK(get(*b, ctx, out.data(), gone, 1) == Status::kInvalidValue);
    CHECK(run(*b, ctx, Free{gone}).status == Status::kInvalidValue);
  }
  SECTION("a Free already queued makes later work on that memory fail at accept") {
    const Work free_a{ctx, kDefaultStream, Free{a}};
    REQUIRE(b->accept(free_a) == Status::kSuccess);
    CHECK(b->accept(Work{ctx, kDefaultStream, Free{a}}) == Status::kInvalidValue);
    CHECK(b->accept(Work{ctx, kDefaultStream, Memset{a, 1, 0}}) == Status::kInvalidValue);
    b->discard(free_a);  // never ran: a is still there
  }
  CHECK(out == untouched_out);
  CHECK(read(*b, ctx, a, 1000) == pa);
  CHECK(read(*b, ctx, next, 1000) == pn);
  CHECK(read(*b, same_tenant, mine, 64) == pm);
  CHECK(read(*b, other_tenant, theirs, 64) == pt);
}

TEST_CASE("sim: memory caps hold per tenant across its contexts") {
  auto b = make_backend();
  const uint64_t MiB = 1 << 20;
  b->set_memory_cap(7, 1 * MiB);
  const ContextId c1 = new_context(*b, 7);
  const ContextId c2 = new_context(*b, 7);
  const ContextId other = new_context(*b, 8);

  const uint64_t p = alloc(*b, c1, 600 * 1024);
  uint64_t q = 0;
  CHECK(b->mem_alloc(c2, 600 * 1024, &q) == Status::kMemoryAllocation);
  CHECK(q == 0);
  TenantMemory m = b->tenant_memory(7);
  CHECK(m.used == 600 * 1024);
  CHECK(m.peak == 600 * 1024);
  CHECK(m.cap == MiB);

  uint64_t free = 0, total = 0;
  REQUIRE(b->mem_info(c2, &free, &total) == Status::kSuccess);
  CHECK(total == MiB);
  CHECK(free == MiB - 600 * 1024);

  // Another tenant sees the whole device and none of tenant 7's usage.
  REQUIRE(b->mem_info(other, &free, &total) == Status::kSuccess);
  CHECK(total == (1ull << 30));
  CHECK(free == total);
  const uint64_t big = alloc(*b, other, 512 * MiB);
  CHECK(b->tenant_memory(8).used == 512 * MiB);
  // ... but not more than the device has.
  CHECK(b->mem_alloc(other, 600 * MiB, &q) == Status::kMemoryAllocation);
  CHECK(b->mem_alloc(other, 2ull << 30, &q) == Status::kMemoryAllocation);
  CHECK(b->mem_alloc(other, UINT64_MAX, &q) == Status::kMemoryAllocation);

  REQUIRE(run(*b, c1, Free{p}).status == Status::kSuccess);
  REQUIRE(run(*b, other, Free{big}).status == Status::kSuccess);
  m = b->tenant_memory(7);
  CHECK(m.used == 0);
  CHECK(m.peak == 600 * 1024);
  CHECK(alloc(*b, c2, 900 * 1024) != 0);
  b->set_memory_cap(7, 0);  // no cap beyond the device
  CHECK(alloc(*b, c2, 900 * 1024) != 0);
  CHECK(b->tenant_memory(99).used == 0);  // never seen
}

TEST_CASE("sim: destroy_context releases memory and the context") {
  auto b = make_backend();
  const ContextId ctx = new_context(*b, 3);
  const uint64_t p = alloc(*b, ctx, 64 << 20);
  REQUIRE(run(*b, ctx, Memset{p, 64 << 20, 1}).status == Status::kSuccess);
  CHECK(b->tenant_memory(3).used == 64 << 20);
  b->destroy_context(ctx);
  CHECK(b->tenant_memory(3).used == 0);
  uint64_t q = 0;
  CHECK(b->mem_alloc(ctx, 1, &q) == Status::kInvalidResourceHandle);
  CHECK(b->accept(Work{ctx, kDefaultStream, Synchronize{}}) == Status::kInvalidResourceHandle);
  b->destroy_context(ctx);  // twice: harmless

  // Many contexts come and go: slots and memory are reused.
  for (int i = 0; i < 50; ++i) {
    const ContextId c = new_context(*b, 3);
    alloc(*b, c, 1 << 20);
    b->destroy_context(c);
  }
  CHECK(b->tenant_memory(3).used == 0);
}
