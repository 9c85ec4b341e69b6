#include "allocation_table.h"

#include <catch2/catch.hpp>

using vgpu::executor::sim::AllocationTable;
using vgpu::executor::sim::AllocKind;

TEST_CASE("allocation table: first fit, 256-byte alignment, one allocation per range") {
  constexpr uint64_t base = 0x2000'0000'0000ull;
  AllocationTable t(base, 1 << 20);
  const uint64_t a = t.allocate(100, AllocKind::kUser);
  const uint64_t b = t.allocate(300, AllocKind::kUser);
  REQUIRE(a == base);
  REQUIRE(b == base + 256);  // 100 rounds up to 256
  CHECK(t.high_water() == 256 + 512);

  uint64_t off = 0;
  CHECK(t.resolve(a, 100, false, &off));
  CHECK(off == 0);
  CHECK(t.resolve(a + 99, 1, false, &off));
  CHECK_FALSE(t.resolve(a + 99, 2, false, &off));  // past the requested size
  CHECK_FALSE(t.resolve(a + 100, 1, false, &off));  // in the rounding slack
  CHECK_FALSE(t.resolve(a, 400, false, &off));      // spans two allocations
  CHECK_FALSE(t.resolve(a + 8, UINT64_MAX, false, &off));
  CHECK_FALSE(t.resolve(base - 1, 1, false, &off));
  CHECK_FALSE(t.resolve(a, 0, false, &off));

  t.find_start(a)->free_pending = true;
  CHECK_FALSE(t.resolve(a, 1, false, &off));
  CHECK(t.resolve(a, 1, true, &off));
  CHECK(t.find_start(a + 1) == nullptr);

  uint64_t hole = 0, hole_size = 0;
  t.release(a, &hole, &hole_size);
  CHECK(hole == 0);
  CHECK(hole_size == 256);
  CHECK_FALSE(t.resolve(a, 1, true, &off));
  // The freed gap is reused first; freeing b merges everything back.
  CHECK(t.allocate(200, AllocKind::kUser) == a);
  t.release(a, &hole, &hole_size);
  t.release(b, &hole, &hole_size);
  CHECK(hole == 0);
  CHECK(hole_size == 1 << 20);
  CHECK(t.high_water() == 0);
  CHECK(t.count() == 0);
}

TEST_CASE("allocation table: refuses what cannot fit") {
  AllocationTable t(0x2000'0000'0000ull, 4096);
  CHECK(t.allocate(0, AllocKind::kUser) == 0);
  CHECK(t.allocate(4097, AllocKind::kUser) == 0);
  CHECK(t.allocate(UINT64_MAX, AllocKind::kUser) == 0);
  const uint64_t a = t.allocate(4096, AllocKind::kVariable);
  CHECK(a != 0);
  CHECK(t.allocate(1, AllocKind::kUser) == 0);
  CHECK(t.find_start(a)->kind == AllocKind::kVariable);
}
