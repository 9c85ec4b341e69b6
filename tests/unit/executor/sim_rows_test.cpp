// Copies of rows (CopyRows, a 2D copy in one work item) on the sim backend:
// each kind moves exactly its rows and leaves the gaps between them alone; a
// side that reaches past one of the context's own allocations, or a shape
// that is not one, is refused before anything moves.
#include <numeric>

#include "sim_test_support.h"
#include "vgpu/protocol/rows.h"

using namespace vgpu;
using namespace vgpu::executor;
using namespace vgpu::executor::test;

namespace {

constexpr uint64_t kWidth = 40, kHeight = 50, kPitch = 64;

}  // namespace

TEST_CASE("sim: rows to the device, back to a host with its own pitch, and device to device") {
  auto b = make_backend();
  const ContextId ctx = new_context(*b, 1);
  const uint64_t bytes = kPitch * kHeight;
  const uint64_t a = alloc(*b, ctx, bytes), c = alloc(*b, ctx, bytes);
  const std::vector<uint8_t> fill(bytes, 0x11);
  REQUIRE(put(*b, ctx, a, fill.data(), bytes) == Status::kSuccess);
  REQUIRE(put(*b, ctx, c, fill.data(), bytes) == Status::kSuccess);
  std::vector<uint8_t> packed(kWidth * kHeight);
  std::iota(packed.begin(), packed.end(), 3);

  REQUIRE(run(*b, ctx, CopyRows{proto::kRowsHostToDevice, a, kPitch, 0, kWidth, kWidth, kHeight, packed.data()})
              .status == Status::kSuccess);
  const auto on_device = read(*b, ctx, a, bytes);
  for (uint64_t y = 0; y < kHeight; ++y) {
    for (uint64_t x = 0; x < kPitch; ++x) {
      INFO("row " << y << " byte " << x);
      CHECK(on_device[y * kPitch + x] == (x < kWidth ? packed[y * kWidth + x] : 0x11));
    }
  }

  // Device to device, rows 1.. of a into c at column 8.
  REQUIRE(run(*b, ctx, CopyRows{proto::kRowsDeviceToDevice, c + 8, kPitch, a + kPitch, kPitch, 16, kHeight - 1, nullptr})
              .status == Status::kSuccess);
  const auto copied = read(*b, ctx, c, bytes);
  for (uint64_t y = 0; y < kHeight - 1; ++y) {
    for (uint64_t x = 0; x < kPitch; ++x) {
      INFO("row " << y << " byte " << x);
      const bool inside = x >= 8 && x < 24;
      CHECK(copied[y * kPitch + x] == (inside ? packed[(y + 1) * kWidth + x - 8] : 0x11));
    }
  }

  // Back to host rows 100 bytes apart: the gaps keep their bytes.
  std::vector<uint8_t> host(100 * kHeight, 0xEE);
  REQUIRE(run(*b, ctx, CopyRows{proto::kRowsDeviceToHost, 0, 100, a, kPitch, kWidth, kHeight, host.data()})
              .status == Status::kSuccess);
  for (uint64_t y = 0; y < kHeight; ++y) {
    for (uint64_t x = 0; x < 100 && y * 100 + x < host.size(); ++x) {
      INFO("row " << y << " byte " << x);
      CHECK(host[y * 100 + x] == (x < kWidth ? packed[y * kWidth + x] : 0xEE));
    }
  }

  // A source pitch of 0 repeats one row (a 2D memset's rows after the first).
  REQUIRE(run(*b, ctx, CopyRows{proto::kRowsDeviceToDevice, c + kPitch, kPitch, a, 0, kWidth, kHeight - 1, nullptr})
              .status == Status::kSuccess);
  const auto repeated = read(*b, ctx, c, bytes);
  for (uint64_t y = 1; y < kHeight; ++y) {
    for (uint64_t x = 0; x < kWidth; ++x) CHECK(repeated[y * kPitch + x] == packed[x]);
  }
}

TEST_CASE("sim: rows reaching past the context's allocation, or of no shape, are refused untouched") {
  auto b = make_backend();
  const ContextId ctx = new_context(*b, 1);
  const ContextId other = new_context(*b, 2);
  const uint64_t bytes = kPitch * kHeight;
  const uint64_t a = alloc(*b, ctx, bytes);
  const uint64_t theirs = alloc(*b, other, bytes);
  const std::vector<uint8_t> fill(bytes, 0x22);
  REQUIRE(put(*b, ctx, a, fill.data(), bytes) == Status::kSuccess);
  REQUIRE(put(*b, other, theirs, fill.data(), bytes) == Status::kSuccess);
  std::vector<uint8_t> host(kPitch * (kHeight + 1), 0x33);
  auto refused = [&](CopyRows c) { return run(*b, ctx, c).status == Status::kInvalidValue; };

  // The last row's end is one byte past the allocation.
  CHECK(refused({proto::kRowsHostToDevice, a + kPitch - kWidth + 1, kPitch, 0, kWidth, kWidth, kHeight, host.data()}));
  CHECK(refused({proto::kRowsDeviceToHost, 0, kWidth, a + 1, kPitch, kPitch, kHeight, host.data()}));
  // One more row than the allocation holds.
  CHECK(refused({proto::kRowsDeviceToDevice, a, kPitch, a, kPitch, kWidth, kHeight + 1, nullptr}));
  // Another tenant's memory on either side.
  CHECK(refused({proto::kRowsDeviceToDevice, a, kPitch, theirs, kPitch, kWidth, kHeight, nullptr}));
  CHECK(refused({proto::kRowsDeviceToDevice, theirs, kPitch, a, kPitch, kWidth, kHeight, nullptr}));
  // Overlapping rows, no rows, an unknown kind, a host side without bytes, a span past 2^64.
  CHECK(refused({proto::kRowsDeviceToDevice, a, 8, a + 1024, kPitch, 16, 4, nullptr}));
  CHECK(refused({proto::kRowsDeviceToDevice, a, kPitch, a, kPitch, 0, 4, nullptr}));
  CHECK(refused({proto::kRowsDeviceToDevice, a, kPitch, a, kPitch, kWidth, 0, nullptr}));
  CHECK(refused({3, a, kPitch, a, kPitch, kWidth, 2, nullptr}));
  CHECK(refused({proto::kRowsHostToDevice, a, kPitch, 0, kWidth, kWidth, 2, nullptr}));
  CHECK(refused({proto::kRowsDeviceToDevice, a, UINT64_MAX / 2, a, kPitch, kWidth, 4, nullptr}));

  CHECK(read(*b, ctx, a, bytes) == fill);
  CHECK(read(*b, other, theirs, bytes) == fill);
}
