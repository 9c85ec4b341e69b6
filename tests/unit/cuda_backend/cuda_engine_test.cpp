// The worker's engine over the FAKE driver, in this process: contexts,
// modules and the parameter-layout check, launches and their timing, staged
// copies in chunks, sticky faults, reset.
#include <catch2/catch.hpp>

#include <algorithm>
#include <thread>

#include "cuda_test_support.h"
#include "engine.h"
#include "fake_cuda.h"
#include "staging_transfer.h"

using namespace vgpu;
using namespace vgpu::executor::cuda;
namespace fake = vgpu::test::fake_cuda;
using vgpu::test::Params;

namespace {

struct Fixture {
  DriverApi api;
  std::unique_ptr<Engine> engine;
  std::vector<uint8_t> image = test::fixture_fatbin();
  std::vector<uint8_t> region = std::vector<uint8_t>(StagingArea::region_bytes(64 * 1024));
  StagingArea staging{region.data(), 64 * 1024};

  explicit Fixture(const fake::Knobs& knobs = {}) {
    fake::reset(knobs);
    fake::install(&api);
    engine = std::make_unique<Engine>(api);
  }
  ~Fixture() {
    fake::release_hang();
    engine.reset();
  }
  void up() {
    std::string why;
    REQUIRE(engine->init(0, CU_CTX_SCHED_SPIN, &why) == CUDA_SUCCESS);
    REQUIRE(engine->attach_staging(&staging, true) == CUDA_SUCCESS);
    REQUIRE(engine->module_load(100, image.data()) == CUDA_SUCCESS);
  }
  void function(uint64_t handle, const char* name, std::vector<ParamSlot>* layout = nullptr) {
    std::vector<ParamSlot> l;
    bool known = false;
    REQUIRE(engine->function_get(100, handle, name, layout ? layout : &l, &known) == CUDA_SUCCESS);
    CHECK(known);
  }
};

const uint32_t kOne[3] = {1, 1, 1};

// Runs `items` as one batch, all finished before it returns.
std::vector<Timed> run_all(Engine& e, const std::vector<ItemSpec>& items, uint32_t depth = 8,
                           std::vector<uint8_t>* out = nullptr) {
  std::vector<Timed> done;
  std::vector<uint8_t> ignored;
  REQUIRE(e.run_items(items, UINT64_MAX, depth, {}, &done, out ? out : &ignored) == items.size());
  REQUIRE(done.size() == items.size());
  return done;
}

ItemSpec on(uint64_t stream, wire::ItemKind kind, uint64_t a = 0, uint64_t b = 0, uint64_t c = 0,
            uint32_t flags = 0) {
  ItemSpec i;
  i.kind = kind;
  i.stream = {stream, flags, 0};
  i.a = a;
  i.b = b;
  i.c = c;
  return i;
}

ItemSpec launch_on(uint64_t stream, uint64_t function, std::span<const uint8_t> params,
                   uint32_t flags = 0) {
  ItemSpec i = on(stream, wire::ItemKind::kLaunch, function, 0, 0, flags);
  i.launch = LaunchSpec{function, {1, 1, 1}, {1, 1, 1}, 0, false, params};
  return i;
}

}  // namespace

TEST_CASE("cuda engine: a context on the device the config names, and nothing left after") {
  {
    Fixture f;
    f.up();
    CHECK(fake::stats().primary_retains == 1);
    CHECK(fake::stats().registered ==
          2);  // the staging slots and the batches' copy-back buffer, page-locked once
    CHECK(f.engine->staging_pinned());
    CHECK(fake::stats().live_streams == 2);  // work and control
    uint64_t p = 0;
    REQUIRE(f.engine->alloc(4096, &p) == CUDA_SUCCESS);
    REQUIRE(f.engine->event_create(7, CU_EVENT_DEFAULT) == CUDA_SUCCESS);
  }
  const fake::Stats s = fake::stats();
  CHECK(s.primary_retains == 0);
  CHECK(s.live_allocations == 0);
  CHECK(s.live_events == 0);
  CHECK(s.live_streams == 0);
  CHECK(s.live_modules == 0);
  CHECK(s.registered == 0);

  fake::Knobs two;
  two.device_count = 2;
  Fixture f2(two);
  std::string why;
  CHECK(f2.engine->init(1, 0, &why) == CUDA_SUCCESS);
  Fixture f3;
  CHECK(f3.engine->init(1, 0, &why) == CUDA_ERROR_INVALID_DEVICE);
  CHECK(why == "device 1 does not exist (the driver sees 1)");
  fake::Knobs broken;
  broken.init_fails = true;
  Fixture f4(broken);
  CHECK(f4.engine->init(0, 0, &why) == CUDA_ERROR_NO_DEVICE);
  CHECK(why == "cuInit: CUDA_ERROR_NO_DEVICE");
}

TEST_CASE("cuda engine: kernels are found by device name with the driver's parameter layout") {
  Fixture f;
  f.up();
  std::vector<ParamSlot> layout;
  f.function(1, test::kFill, &layout);
  REQUIRE(layout.size() == 3);
  CHECK((layout[0].offset == 0 && layout[0].size == 8));
  CHECK((layout[1].offset == 8 && layout[1].size == 4));
  CHECK((layout[2].offset == 12 && layout[2].size == 4));
  f.function(2, test::kPair, &layout);
  REQUIRE(layout.size() == 2);
  CHECK((layout[0].offset == 0 && layout[0].size == 16));  // the struct, 8-aligned
  CHECK((layout[1].offset == 16 && layout[1].size == 8));
  bool known = false;
  CHECK(f.engine->function_get(100, 3, "_Z7missingv", &layout, &known) == CUDA_ERROR_NOT_FOUND);
  CHECK(f.engine->function_get(999, 3, test::kFill, &layout, &known) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(f.engine->function_get(100, 1, test::kFill, &layout, &known) == CUDA_ERROR_INVALID_HANDLE);

  KernelAttributes attrs;
  REQUIRE(f.engine->func_attributes(1, &attrs) == CUDA_SUCCESS);
  CHECK(attrs.max_threads_per_block == 1024);
  CHECK(attrs.num_regs == 16);
}

TEST_CASE("cuda engine: a launch passes the packed parameters and reports its GPU time") {
  Fixture f;
  f.up();
  f.function(1, test::kFill);
  f.function(2, test::kSpin);
  uint64_t p = 0;
  REQUIRE(f.engine->alloc(1000 * 4, &p) == CUDA_SUCCESS);
  const auto params = Params{}.at(0, p).at(8, int32_t{77}).at(12, int32_t{1000}).bytes;
  const uint32_t grid[3] = {4, 1, 1}, block[3] = {256, 1, 1};
  const Timed t = f.engine->launch(1, grid, block, 0, params);
  REQUIRE(t.result == CUDA_SUCCESS);
  CHECK(fake::stats().last_launch_param_bytes == 16);
  const auto* ints = reinterpret_cast<const int32_t*>(p);  // the fake's device memory is ours
  CHECK(ints[0] == 77);
  CHECK(ints[999] == 77);

  const auto spin = Params{}.at(0, uint64_t{20'000'000}).bytes;  // 20 ms
  const Timed s = f.engine->launch(2, kOne, kOne, 0, spin);
  REQUIRE(s.result == CUDA_SUCCESS);
  CHECK(s.gpu_ns >= 19'000'000);
  CHECK(s.gpu_ns < 2'000'000'000);

  // Events the guest records time what ran between them.
  REQUIRE(f.engine->event_create(10, CU_EVENT_DEFAULT) == CUDA_SUCCESS);
  REQUIRE(f.engine->event_create(11, CU_EVENT_DEFAULT) == CUDA_SUCCESS);
  run_all(*f.engine, {on(0, wire::ItemKind::kRecordEvent, 10), launch_on(0, 2, spin),
                      on(0, wire::ItemKind::kRecordEvent, 11)});
  float ms = 0;
  REQUIRE(f.engine->event_elapsed(10, 11, &ms) == CUDA_SUCCESS);
  CHECK(ms >= 19.0f);
  CHECK(f.engine->event_elapsed(10, 12, &ms) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(f.engine->launch(9, kOne, kOne, 0, spin).result == CUDA_ERROR_INVALID_HANDLE);

  // A cooperative launch goes through cuLaunchKernelEx with the cooperative
  // attribute, with the same packed parameters; the driver's own limit on
  // a grid resident at once holds.
  const auto more = Params{}.at(0, p).at(8, int32_t{78}).at(12, int32_t{1000}).bytes;
  REQUIRE(f.engine->launch(1, grid, block, 0, more, true).result == CUDA_SUCCESS);
  CHECK(fake::stats().cooperative_launches == 1);
  CHECK(ints[999] == 78);
  const uint32_t too_many[3] = {132 * 32 + 1, 1, 1};
  CHECK(f.engine->launch(1, too_many, block, 0, more, true).result == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  CHECK(fake::stats().cooperative_launches == 1);
}

TEST_CASE("cuda engine: guest streams are the driver's, so a batch overlaps them as CUDA would") {
  constexpr uint64_t kMs = 1'000'000,
                     kCost = 200 * kMs;  // long, so a loaded machine's gaps stay small beside it
  fake::Knobs knobs;
  knobs.copy_ns = kCost;  // every copy and memset
  Fixture f(knobs);
  f.up();
  f.function(3, "work");  // takes its argument's ns of modeled time
  uint64_t p = 0;
  REQUIRE(f.engine->alloc(4096, &p) == CUDA_SUCCESS);
  for (uint64_t e = 10; e <= 14; ++e)
    REQUIRE(f.engine->event_create(e, CU_EVENT_DEFAULT) == CUDA_SUCCESS);
  const auto work = Params{}.at(0, kCost).bytes;
  using K = wire::ItemKind;
  auto ms = [&](uint64_t a, uint64_t b) {
    float v = 0;
    REQUIRE(f.engine->event_elapsed(a, b, &v) == CUDA_SUCCESS);
    return static_cast<double>(v);
  };

  SECTION("a kernel and a memset on two streams run at once; the default stream waits for both") {
    const auto done =
        run_all(*f.engine, {on(0, K::kRecordEvent, 10), launch_on(7, 3, work),
                            on(8, K::kMemset, p, 4096, 0x5a), on(0, K::kRecordEvent, 11)});
    CHECK(f.engine->guest_streams() == 2);
    // Each item is charged its own time on its own stream.
    CHECK(done[1].gpu_ns >= kCost * 99 / 100);
    CHECK(done[2].gpu_ns >= kCost * 99 / 100);
    CHECK(done[2].gpu_ns < kCost * 3 / 2);
    // Together they took one cost, not two; the legacy stream's record came after both.
    CHECK(ms(10, 11) >= 199.0);
    CHECK(ms(10, 11) < 300.0);
    CHECK(reinterpret_cast<const uint8_t*>(p)[4095] == 0x5a);
  }
  SECTION("the same on one stream runs one after the other") {
    run_all(*f.engine, {on(0, K::kRecordEvent, 10), launch_on(7, 3, work),
                        on(7, K::kMemset, p, 4096, 1), on(0, K::kRecordEvent, 11)});
    CHECK(ms(10, 11) >= 399.0);
  }
  SECTION("an event a stream waits for orders it after another, and the wait is not charged") {
    const uint32_t nb = wire::kStreamNonBlocking;
    const auto done = run_all(
        *f.engine, {on(9, K::kRecordEvent, 12, 0, 0, nb), launch_on(9, 3, work, nb),
                    on(9, K::kRecordEvent, 13, 0, 0, nb), on(10, K::kWaitEvent, 13, 0, 0, nb),
                    on(10, K::kMemset, p, 4096, 2, nb), on(10, K::kRecordEvent, 14, 0, 0, nb)});
    CHECK(ms(12, 14) >= 399.0);  // the memset began once the kernel ended
    CHECK(done[4].gpu_ns < kCost * 3 / 2);
  }
  SECTION("a non-blocking stream does not wait for the default stream") {
    const uint32_t nb = wire::kStreamNonBlocking;
    run_all(*f.engine,
            {on(0, K::kRecordEvent, 10), launch_on(0, 3, work), on(11, K::kMemset, p, 4096, 3, nb),
             on(11, K::kRecordEvent, 12, 0, 0, nb), on(0, K::kRecordEvent, 11)});
    CHECK(ms(10, 12) < 300.0);
    CHECK(ms(10, 11) >= 199.0);
  }
  SECTION(
      "a destroyed stream is the driver's no more; small copies travel in the batch and its "
      "reply") {
    const std::vector<uint8_t> bytes(100, 0x77);
    ItemSpec copy = on(7, K::kCopyIn, p + 8);
    copy.data = bytes;
    std::vector<uint8_t> out;
    run_all(*f.engine,
            {copy, on(7, K::kCopyOut, p + 8, 0, 3), on(7, K::kDestroyStream), on(8, K::kNothing),
             on(8, K::kCopyOut, p, 0, 9)},
            8, &out);
    CHECK(f.engine->guest_streams() == 1);
    CHECK(fake::stats().live_streams == 3);
    const int64_t made = fake::stats().streams_created;
    run_all(*f.engine,
            {on(9, K::kDestroyStream)});  // never carried work: nothing made or destroyed
    CHECK(fake::stats().streams_created == made);
    CHECK(f.engine->guest_streams() == 1);
    CHECK(fake::stats().live_streams == 3);
    CHECK(reinterpret_cast<const uint8_t*>(p)[8 + 99] == 0x77);
    CHECK(fake::stats().h2d_copies == 1);
    // Each copy's bytes, in order, padded to 8.
    REQUIRE(out.size() == 8 + 16);
    CHECK(out[0] == 0x77);
    CHECK(out[2] == 0x77);
    CHECK(out[3] == 0);
    CHECK(out[8 + 8] == 0x77);  // p + 8, the ninth byte of the second copy
  }
}

TEST_CASE("cuda engine: thread block clusters take the launch's shape or the kernel's own") {
  Fixture f;
  f.up();
  f.function(1, test::kFill);
  f.function(3, test::kPaired);
  uint64_t p = 0;
  REQUIRE(f.engine->alloc(64 * 4, &p) == CUDA_SUCCESS);
  const auto params = Params{}.at(0, p).at(8, int32_t{5}).at(12, int32_t{64}).bytes;
  const uint32_t grid[3] = {4, 1, 1}, block[3] = {16, 1, 1}, pairs[3] = {2, 1, 1};
  REQUIRE(f.engine->launch(1, grid, block, 0, params, false, pairs).result == CUDA_SUCCESS);
  CHECK(fake::stats().cluster_launches == 1);
  CHECK(fake::stats().last_cluster[0] == 2);
  CHECK(reinterpret_cast<const int32_t*>(p)[63] == 5);
  // The driver's own checks hold: a grid that is not a multiple of the shape.
  const uint32_t six[3] = {6, 1, 1}, fours[3] = {4, 1, 1};
  CHECK(f.engine->launch(1, six, block, 0, params, false, fours).result == CUDA_ERROR_INVALID_CLUSTER_SIZE);
  // Over the portable 8 blocks: the guest allowed it, so the engine tells the
  // driver (the fake refuses 16 blocks otherwise).
  const uint32_t sixteen[3] = {16, 1, 1};
  REQUIRE(f.engine->launch(1, sixteen, block, 0, params, false, sixteen).result == CUDA_SUCCESS);
  CHECK(fake::stats().last_cluster[0] == 16);
  // A kernel whose shape is compiled in is launched without one (the fake
  // refuses a launch shape for it).
  const auto out = Params{}.at(0, p).bytes;
  REQUIRE(f.engine->launch(3, grid, kOne, 0, out, false, pairs).result == CUDA_SUCCESS);
  CHECK(fake::stats().cluster_launches == 3);
  // Cooperative and clustered at once: both attributes.
  REQUIRE(f.engine->launch(1, grid, block, 0, params, true, pairs).result == CUDA_SUCCESS);
  CHECK(fake::stats().cooperative_launches == 1);
  CHECK(fake::stats().cluster_launches == 4);
}

TEST_CASE("cuda engine: more than 48 KiB of dynamic shared memory, as the guest allowed it") {
  Fixture f;
  f.up();
  f.function(1, test::kFill);
  uint64_t p = 0;
  REQUIRE(f.engine->alloc(64 * 4, &p) == CUDA_SUCCESS);
  const auto params = Params{}.at(0, p).at(8, int32_t{7}).at(12, int32_t{64}).bytes;
  const uint32_t grid[3] = {4, 1, 1}, block[3] = {16, 1, 1};
  // The driver refuses such a launch until the function allows it; the
  // guest checked the device's limit when the program allowed it.
  REQUIRE(f.engine->launch(1, grid, block, 96 * 1024, params).result == CUDA_SUCCESS);
  CHECK(reinterpret_cast<const int32_t*>(p)[63] == 7);
  REQUIRE(f.engine->launch(1, grid, block, 64 * 1024, params).result == CUDA_SUCCESS);
  // Past the device's opt-in limit the driver's answer stands.
  CHECK(f.engine->launch(1, grid, block, 300 * 1024, params).result == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("cuda engine: copies move through the two staging slots, chunk by chunk") {
  Fixture f;
  f.up();
  const uint64_t size = 5 * 64 * 1024 + 7;  // six chunks, the last one short
  uint64_t p = 0;
  REQUIRE(f.engine->alloc(size, &p) == CUDA_SUCCESS);
  std::vector<uint8_t> in(size), out(size, 0);
  for (size_t i = 0; i < size; ++i) in[i] = static_cast<uint8_t>(i * 131 + 7);

  // The daemon's half runs in another thread, as it runs in another process.
  const uint64_t deadline = monotonic_ns() + 10'000'000'000ull;
  stage_first_chunk(f.staging, in.data(), size);
  std::thread daemon([&] { CHECK(feed_chunks(f.staging, in.data(), size, deadline, {}) ==
                                 StagingArea::Wait::kReady); });
  const Timed t = f.engine->copy_in(p, size, {}, deadline, {});
  daemon.join();
  REQUIRE(t.result == CUDA_SUCCESS);
  CHECK(fake::stats().h2d_copies == 6);
  CHECK(std::memcmp(reinterpret_cast<const void*>(p), in.data(), size) == 0);

  f.staging.reset();
  std::thread drain([&] { CHECK(drain_chunks(f.staging, out.data(), size, deadline, {}) ==
                                StagingArea::Wait::kReady); });
  const Timed t2 = f.engine->copy_out(p, size, {}, deadline, {});
  drain.join();
  REQUIRE(t2.result == CUDA_SUCCESS);
  CHECK(fake::stats().d2h_copies == 6);
  CHECK(out == in);

  // Small copies: one chunk, no waiting on the other side.
  uint64_t q = 0;
  REQUIRE(f.engine->alloc(16, &q) == CUDA_SUCCESS);
  stage_first_chunk(f.staging, in.data(), 16);
  REQUIRE(f.engine->copy_in(q, 16, {}, deadline, {}).result == CUDA_SUCCESS);
  CHECK(std::memcmp(reinterpret_cast<const void*>(q), in.data(), 16) == 0);

  // A copy the driver refuses ends early, and the daemon's side is told.
  stage_first_chunk(f.staging, in.data(), 64);
  CHECK(f.engine->copy_in(q, 64, {}, deadline, {}).result == CUDA_ERROR_INVALID_VALUE);
  // A daemon that stops feeding: the copy gives up instead of waiting forever.
  f.staging.reset();
  CHECK(f.engine->copy_in(p, size, {}, deadline, [] { return true; }).result ==
        CUDA_ERROR_OPERATING_SYSTEM);
}

TEST_CASE("cuda engine: a copy of rows is one 2D driver copy per chunk's whole rows, gaps untouched") {
  Fixture f;
  f.up();
  // 700 rows of 300 bytes, 512 apart on the device: 210,000 bytes, four
  // 64 KiB chunks, rows split across their edges.
  constexpr uint64_t kWidth = 300, kRows = 700, kPitch = 512;
  const uint64_t size = kWidth * kRows;
  uint64_t p = 0;
  REQUIRE(f.engine->alloc(kPitch * kRows, &p) == CUDA_SUCCESS);
  std::memset(reinterpret_cast<void*>(p), 0x11, kPitch * kRows);
  std::vector<uint8_t> in(size), out(size, 0);
  for (size_t i = 0; i < size; ++i) in[i] = static_cast<uint8_t>(i * 37 + 1);
  const wire::RowShape rows{kWidth, kPitch, kWidth};
  const uint64_t deadline = monotonic_ns() + 10'000'000'000ull;
  stage_first_chunk(f.staging, in.data(), size);
  std::thread daemon([&] { CHECK(feed_chunks(f.staging, in.data(), size, deadline, {}) ==
                                 StagingArea::Wait::kReady); });
  const Timed t = f.engine->copy_in(p, size, rows, deadline, {});
  daemon.join();
  REQUIRE(t.result == CUDA_SUCCESS);
  CHECK(fake::stats().copies_2d == 4);
  CHECK(fake::stats().h2d_copies <= 8);  // the part rows at the chunks' edges
  const auto* device = reinterpret_cast<const uint8_t*>(p);
  size_t wrong = 0;
  for (uint64_t y = 0; y < kRows; ++y)
    for (uint64_t x = 0; x < kPitch; ++x)
      wrong += device[y * kPitch + x] != (x < kWidth ? in[y * kWidth + x] : 0x11);
  CHECK(wrong == 0);

  f.staging.reset();
  const wire::RowShape back{kWidth, kWidth, kPitch};
  std::thread drain([&] { CHECK(drain_chunks(f.staging, out.data(), size, deadline, {}) ==
                                StagingArea::Wait::kReady); });
  const Timed t2 = f.engine->copy_out(p, size, back, deadline, {});
  drain.join();
  REQUIRE(t2.result == CUDA_SUCCESS);
  CHECK(out == in);

  // Device to device: one 2D copy; a repeated source row (pitch 0) goes row by row.
  uint64_t q = 0;
  REQUIRE(f.engine->alloc(kPitch * kRows, &q) == CUDA_SUCCESS);
  std::memset(reinterpret_cast<void*>(q), 0x11, kPitch * kRows);  // the gaps, as p's
  const int64_t before = fake::stats().copies_2d;
  REQUIRE(f.engine->copy_on_device(q, p, size, {kWidth, kPitch, kPitch}).result == CUDA_SUCCESS);
  CHECK(fake::stats().copies_2d == before + 1);
  CHECK(std::memcmp(reinterpret_cast<const void*>(q), device, kPitch * (kRows - 1) + kWidth) == 0);
  REQUIRE(f.engine->copy_on_device(q + kPitch, p, kWidth * (kRows - 1), {kWidth, kPitch, 0}).result ==
          CUDA_SUCCESS);
  wrong = 0;
  for (uint64_t y = 1; y < kRows; ++y)
    wrong += std::memcmp(reinterpret_cast<const void*>(q + y * kPitch), device, kWidth) != 0;
  CHECK(wrong == 0);
  // Rows past the allocation: the driver refuses.
  CHECK(f.engine->copy_on_device(q + kPitch, p, size, {kWidth, kPitch, kPitch}).result ==
        CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE(
    "cuda engine: the attached data area is registered once; copies go straight between it and the "
    "device") {
  Fixture f;
  f.up();
  std::vector<uint8_t> area(1 << 16);
  uint64_t p = 0;
  REQUIRE(f.engine->alloc(4096, &p) == CUDA_SUCCESS);
  CHECK(f.engine->copy_area(true, p, 0, 16).result == CUDA_ERROR_INVALID_VALUE);  // none attached
  REQUIRE(f.engine->attach_area(area.data(), area.size()) == CUDA_SUCCESS);
  CHECK(fake::stats().registered == 3);
  CHECK(f.engine->attach_area(area.data(), area.size()) == CUDA_ERROR_INVALID_VALUE);  // once
  for (size_t i = 0; i < 4096; ++i) area[i] = static_cast<uint8_t>(i * 5 + 3);
  REQUIRE(f.engine->copy_area(true, p, 0, 4096).result == CUDA_SUCCESS);
  REQUIRE(f.engine->copy_area(false, p, 8192, 4096).result == CUDA_SUCCESS);
  CHECK(std::equal(area.begin(), area.begin() + 4096, area.begin() + 8192));
  CHECK(f.engine->copy_area(true, p, area.size() - 8, 16).result ==
        CUDA_ERROR_INVALID_VALUE);  // past its end
  CHECK(f.engine->copy_area(false, p, UINT64_MAX, 16).result == CUDA_ERROR_INVALID_VALUE);
  f.engine.reset();
  CHECK(fake::stats().registered == 0);
}

TEST_CASE("cuda engine: a copy with the staging slots page-locked or not") {
  fake::Knobs k;
  k.register_fails = true;
  Fixture f(k);
  std::string why;
  REQUIRE(f.engine->init(0, 0, &why) == CUDA_SUCCESS);
  CHECK(f.engine->attach_staging(&f.staging, true) == CUDA_ERROR_NOT_PERMITTED);
  CHECK_FALSE(f.engine->staging_pinned());
  uint64_t p = 0;
  REQUIRE(f.engine->alloc(100, &p) == CUDA_SUCCESS);
  const std::vector<uint8_t> bytes(100, 0x5a);
  stage_first_chunk(f.staging, bytes.data(), bytes.size());
  CHECK(f.engine->copy_in(p, 100, {}, monotonic_ns() + 1'000'000'000, {}).result == CUDA_SUCCESS);
}

TEST_CASE("cuda engine: a faulting kernel's error is sticky") {
  Fixture f;
  f.up();
  f.function(1, test::kFault);
  f.function(2, test::kFill);
  const auto params = Params{}.at(0, uint64_t{16}).bytes;
  const Timed t = f.engine->launch(1, kOne, kOne, 0, params);
  CHECK(t.result == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(f.engine->sticky() == CUDA_ERROR_ILLEGAL_ADDRESS);
  uint64_t p = 0;
  CHECK(f.engine->alloc(16, &p) == CUDA_ERROR_ILLEGAL_ADDRESS);

  Fixture g;
  g.up();
  g.function(1, test::kTrap);
  CHECK(g.engine->launch(1, kOne, kOne, 0, {}).result == CUDA_ERROR_LAUNCH_FAILED);
  CHECK(g.engine->sticky() == CUDA_ERROR_LAUNCH_FAILED);
}

TEST_CASE("cuda engine: reset frees memory and events and restores variables") {
  Fixture f;
  f.up();
  uint64_t var = 0, bytes = 0;
  REQUIRE(f.engine->var_get(100, "counter", &var, &bytes) == CUDA_SUCCESS);
  CHECK(bytes == 4);
  CHECK(*reinterpret_cast<const int32_t*>(var) == 7);
  f.function(1, test::kBump);
  REQUIRE(f.engine->launch(1, kOne, kOne, 0, Params{}.at(0, int32_t{5}).bytes).result == CUDA_SUCCESS);
  CHECK(*reinterpret_cast<const int32_t*>(var) == 12);
  uint64_t p = 0;
  REQUIRE(f.engine->alloc(64, &p) == CUDA_SUCCESS);
  REQUIRE(f.engine->event_create(3, 0) == CUDA_SUCCESS);
  CHECK(fake::stats().live_allocations == 1);
  run_all(*f.engine, {on(7, wire::ItemKind::kRecordEvent, 3)});  // makes guest stream 7
  CHECK(f.engine->guest_streams() == 1);
  CHECK(fake::stats().live_streams == 3);

  REQUIRE(f.engine->reset() == CUDA_SUCCESS);
  CHECK(*reinterpret_cast<const int32_t*>(var) == 7);
  CHECK(fake::stats().live_allocations == 0);
  // The engine's own: start, end, one per staging slot, two per batch slot.
  CHECK(fake::stats().live_events == 4 + 2 * kMaxItemsInFlight);
  CHECK(f.engine->guest_streams() == 0);
  CHECK(fake::stats().live_streams == 2);
  CHECK(f.engine->free(p) == CUDA_ERROR_INVALID_VALUE);
  // Modules and functions survive a reset.
  CHECK(f.engine->launch(1, kOne, kOne, 0, Params{}.at(0, int32_t{1}).bytes).result == CUDA_SUCCESS);
  CHECK(*reinterpret_cast<const int32_t*>(var) == 8);
  REQUIRE(f.engine->unload_module(100) == CUDA_SUCCESS);
  CHECK(f.engine->launch(1, kOne, kOne, 0, Params{}.at(0, int32_t{1}).bytes).result ==
        CUDA_ERROR_INVALID_HANDLE);
}
