// The cuda backend's logic that needs neither a driver nor a worker.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "common/allocation_map.h"
#include "common/tenant_ledger.h"
#include "cu_status.h"
#include "cuda_test_support.h"
#include "launch_limits.h"
#include "param_layout.h"
#include "staging_area.h"
#include "staging_transfer.h"

using namespace vgpu;
using namespace vgpu::executor;

TEST_CASE("cuda: driver results map to the runtime's errors; sticky ones are known") {
  CHECK(cuda::to_status(CUDA_SUCCESS) == Status::kSuccess);
  CHECK(cuda::to_status(CUDA_ERROR_OUT_OF_MEMORY) == Status::kMemoryAllocation);
  CHECK(cuda::to_status(CUDA_ERROR_ILLEGAL_ADDRESS) == Status::kIllegalAddress);
  CHECK(cuda::to_status(CUDA_ERROR_LAUNCH_FAILED) == Status::kLaunchFailure);
  CHECK(cuda::to_status(CUDA_ERROR_NOT_FOUND) == Status::kSymbolNotFound);
  CHECK(static_cast<int>(cuda::to_status(CUDA_ERROR_MISALIGNED_ADDRESS)) == 716);
  CHECK(cuda::to_status(CUDA_ERROR_CONTEXT_IS_DESTROYED) == Status::kLaunchFailure);
  CHECK(cuda::to_status(static_cast<CUresult>(1001)) == Status::kUnknown);
  CHECK(cuda::is_sticky(CUDA_ERROR_ILLEGAL_ADDRESS));
  CHECK(cuda::is_sticky(CUDA_ERROR_LAUNCH_FAILED));
  CHECK(cuda::is_sticky(CUDA_ERROR_ASSERT));
  CHECK_FALSE(cuda::is_sticky(CUDA_ERROR_OUT_OF_MEMORY));
  CHECK_FALSE(cuda::is_sticky(CUDA_ERROR_INVALID_VALUE));
  CHECK_FALSE(cuda::is_sticky(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
}

TEST_CASE("cuda: a kernel's layout from the fat binary must be the driver's") {
  fatbin::Kernel k;
  k.name = "_Z4fillPiii";
  k.params = {{0, 8}, {8, 4}, {12, 4}};
  k.param_bytes = 16;
  using S = cuda::wire::ParamSlot;
  CHECK(cuda::compare_layouts(k, {S{0, 8}, S{8, 4}, S{12, 4}}).empty());
  CHECK(cuda::compare_layouts(k, {S{0, 8}, S{8, 4}}) == "3 parameters in the fat binary, 2 from the driver");
  CHECK(cuda::compare_layouts(k, {S{0, 8}, S{12, 4}, S{12, 4}}) ==
        "parameter 1: offset 8 size 4 in the fat binary, offset 12 size 4 from the driver");
  CHECK(cuda::compare_layouts(k, {S{0, 8}, S{8, 8}, S{12, 4}}).find("parameter 1") == 0);
  fatbin::Kernel none;
  CHECK(cuda::compare_layouts(none, {}).empty());
}

TEST_CASE("cuda: launch configurations are checked against the device's limits") {
  DeviceInfo d;
  d.attributes[1] = 1024;              // max threads per block
  d.attributes[2] = 1024;              // block x
  d.attributes[3] = 1024;              // block y
  d.attributes[4] = 64;                // block z
  d.attributes[5] = 2147483647;        // grid x
  d.attributes[6] = 65535;             // grid y
  d.attributes[7] = 65535;             // grid z
  d.attributes[97] = 232448;           // shared memory opt-in
  const uint32_t one[3] = {1, 1, 1}, big_block[3] = {1024, 2, 1}, zero[3] = {0, 1, 1};
  const uint32_t fine_block[3] = {256, 4, 1}, tall_grid[3] = {1, 65536, 1};
  CHECK(cuda::check_launch(d, one, fine_block, 0) == Status::kSuccess);
  CHECK(cuda::check_launch(d, one, big_block, 0) == Status::kInvalidConfiguration);
  CHECK(cuda::check_launch(d, zero, one, 0) == Status::kInvalidConfiguration);
  CHECK(cuda::check_launch(d, tall_grid, one, 0) == Status::kInvalidConfiguration);
  CHECK(cuda::check_launch(d, one, one, 232448) == Status::kSuccess);
  CHECK(cuda::check_launch(d, one, one, 232449) == Status::kInvalidValue);
  DeviceInfo unknown;  // limits not reported: only zero dimensions are refused
  CHECK(cuda::check_launch(unknown, one, big_block, 1 << 20) == Status::kSuccess);
  CHECK(cuda::check_launch(unknown, zero, one, 0) == Status::kInvalidConfiguration);
}

TEST_CASE("cuda: the driver's allocations are tracked; ranges must lie in one of them") {
  common::AllocationMap m;
  CHECK(m.insert(0x7000'0000, {1000, 1024, common::AllocKind::kUser, false}));
  CHECK(m.insert(0x7000'1000, {16, 256, common::AllocKind::kVariable, false}));
  CHECK_FALSE(m.insert(0x7000'0100, {8, 256, common::AllocKind::kUser, false}));  // overlaps
  CHECK_FALSE(m.insert(0x6fff'ff00, {0x200, 512, common::AllocKind::kUser, false}));
  CHECK_FALSE(m.insert(UINT64_MAX - 4, {16, 256, common::AllocKind::kUser, false}));  // wraps
  uint64_t start = 0;
  CHECK(m.resolve(0x7000'0000 + 10, 990, false, &start));
  CHECK(start == 0x7000'0000);
  CHECK_FALSE(m.resolve(0x7000'0000 + 10, 991, false, &start));
  CHECK_FALSE(m.resolve(0x7000'0000 + 1000, 1, false, &start));  // charged slack is not valid
  CHECK(m.resolve(0x7000'1000, 16, false, &start));
  m.find_start(0x7000'0000)->free_pending = true;
  CHECK_FALSE(m.resolve(0x7000'0000, 1, false, &start));
  CHECK(m.resolve(0x7000'0000, 1, true, &start));
  CHECK(m.erase(0x7000'0000));
  CHECK_FALSE(m.erase(0x7000'0000));
  CHECK(common::reserved_size(1) == 256);
  CHECK(common::reserved_size(0) == 0);
  CHECK(common::reserved_size(UINT64_MAX) == 0);
}

TEST_CASE("cuda: the tenant's view of memory is its cap and its use") {
  common::TenantLedger ledger(1000 * 1024);
  ledger.set_cap(1, 300 * 1024);
  CHECK(ledger.visible_total(1) == 300 * 1024);
  CHECK(ledger.visible_total(2) == 1000 * 1024);  // no cap: the shared memory
  CHECK(ledger.reserve(1, 200 * 1024));
  CHECK(ledger.available(1) == 100 * 1024);
  CHECK_FALSE(ledger.reserve(1, 101 * 1024));
  CHECK(ledger.reserve(2, 750 * 1024));
  CHECK(ledger.available(2) == 50 * 1024);  // bounded by what the others left
  CHECK(ledger.available(1) == 50 * 1024);
  ledger.release(2, 750 * 1024);
  CHECK(ledger.available(1) == 100 * 1024);
}

TEST_CASE("cuda: copies are cut into slot-sized chunks") {
  std::vector<uint8_t> region(cuda::StagingArea::region_bytes(4096));
  cuda::StagingArea s(region.data(), 4096);
  CHECK(s.chunks(1) == 1);
  CHECK(s.chunks(4096) == 1);
  CHECK(s.chunks(4097) == 2);
  CHECK(s.chunk_length(4097, 0) == 4096);
  CHECK(s.chunk_length(4097, 1) == 1);
  CHECK(s.chunk_length(4097, 2) == 0);
  CHECK(s.slot_for(0) == s.slots());
  CHECK(s.slot_for(1) == s.slots() + 4096);
  CHECK(s.slot_for(2) == s.slots());
  // Waits end on the counter, on `stop`, or at the deadline.
  s.publish_filled(2);
  CHECK(s.wait_filled(2, cuda::monotonic_ns() + 1'000'000, {}) == cuda::StagingArea::Wait::kReady);
  CHECK(s.wait_filled(3, cuda::monotonic_ns() + 1'000'000, {}) == cuda::StagingArea::Wait::kTimedOut);
  CHECK(s.wait_consumed(1, cuda::monotonic_ns() + 1'000'000'000, [] { return true; }) ==
        cuda::StagingArea::Wait::kStopped);
  s.reset();
  CHECK(s.filled() == 0);
}

// The worker fills the last chunk and then answers; the daemon may read the
// counter before the fill and see the answer after it. The copy is complete
// then, and its bytes must be taken (a flaky cuda_backend_test once got the
// answer of a copy from the device with the bytes left in the slot).
TEST_CASE("cuda: a wait that is stopped after its counter moved is ready") {
  std::vector<uint8_t> region(cuda::StagingArea::region_bytes(4096));
  cuda::StagingArea s(region.data(), 4096);
  const uint64_t deadline = cuda::monotonic_ns() + 1'000'000'000;
  const uint64_t word = 0x1122334455667788ull;
  uint64_t back = 0;
  // `stop` is first asked once the counter was seen short: the worker runs now.
  int asked = 0;
  auto worker_finishes_then_answers = [&] {
    if (asked++ == 0) {
      std::memcpy(s.slot_for(0), &word, sizeof word);
      s.publish_filled(1);
    }
    return true;  // its answer is waiting
  };
  CHECK(cuda::drain_chunks(s, reinterpret_cast<uint8_t*>(&back), sizeof back, deadline,
                           worker_finishes_then_answers) == cuda::StagingArea::Wait::kReady);
  CHECK(asked == 1);
  CHECK(back == word);
  CHECK(s.consumed() == 1);
  // An answer with the counter still short (an error mid-copy) still stops it.
  CHECK(s.wait_filled(2, deadline, [] { return true; }) == cuda::StagingArea::Wait::kStopped);
}

TEST_CASE("cuda: a worker's success before every chunk moved does not stand") {
  using Wait = cuda::StagingArea::Wait;
  CHECK_FALSE(cuda::answered_too_soon(Wait::kReady, CUDA_SUCCESS));
  // Stopped early: an error is the worker's to report; a success is a lie.
  CHECK_FALSE(cuda::answered_too_soon(Wait::kStopped, CUDA_ERROR_ILLEGAL_ADDRESS));
  CHECK(cuda::answered_too_soon(Wait::kStopped, CUDA_SUCCESS));
}

TEST_CASE("cuda: VGPU_CUDA_* variables configure the backend") {
  CudaConfig c;
  std::string why;
  {
    test::ScopedEnv a("VGPU_CUDA_DEVICE", "1");
    test::ScopedEnv b("VGPU_CUDA_WATCHDOG_MS", "2500");
    test::ScopedEnv d("VGPU_CUDA_WAIT", "block");
    test::ScopedEnv e("VGPU_CUDA_STAGING_KIB", "1024");
    REQUIRE(apply_cuda_env(&c, &why) == Status::kSuccess);
    CHECK(c.device == 1);
    CHECK(c.watchdog == std::chrono::milliseconds(2500));
    CHECK_FALSE(c.spin_wait);
    CHECK(c.staging_slot_bytes == 1 << 20);
  }
  {
    test::ScopedEnv a("VGPU_CUDA_WATCHDOG_MS", "ten");
    CHECK(apply_cuda_env(&c, &why) == Status::kInvalidValue);
    CHECK(why.find("VGPU_CUDA_WATCHDOG_MS") != std::string::npos);
  }
  {
    test::ScopedEnv a("VGPU_CUDA_WAIT", "sometimes");
    CHECK(apply_cuda_env(&c, &why) == Status::kInvalidValue);
  }
}
