// The allocator for pinned host memory in the data area.
#include <map>
#include <random>

#include <catch2/catch.hpp>

#include "pinned_area.h"

using vgpu::intercept::PinnedArea;

TEST_CASE("pinned blocks are page-aligned, inside the area, and never overlap") {
  const uint64_t begin = 16 * PinnedArea::kPage, size = 256 * PinnedArea::kPage;
  PinnedArea area(begin, size);
  std::mt19937 rng(7);
  std::map<uint64_t, uint64_t> live;  // offset -> bytes asked for
  for (int i = 0; i < 20000; ++i) {
    if (!live.empty() && (rng() % 3 == 0 || live.size() > 40)) {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      REQUIRE(area.release(it->first));
      live.erase(it);
      continue;
    }
    const uint64_t want = 1 + rng() % (20 * PinnedArea::kPage);
    auto off = area.allocate(want);
    if (!off) continue;
    REQUIRE(*off % PinnedArea::kPage == 0);
    REQUIRE(*off >= begin);
    REQUIRE(*off + want <= begin + size);
    for (const auto& [o, n] : live) REQUIRE((*off + want <= o || o + n <= *off));
    REQUIRE(area.holds(*off, want));
    live[*off] = want;
  }
  for (const auto& [o, n] : live) REQUIRE(area.release(o));
  CHECK(area.in_use() == 0);
  // Everything merged back: the whole area fits in one block again.
  auto all = area.allocate(size);
  REQUIRE(all);
  CHECK(*all == begin);
}

TEST_CASE("pinned area: what does not fit is refused, and freeing makes room") {
  PinnedArea area(0, 4 * PinnedArea::kPage);
  CHECK_FALSE(area.allocate(5 * PinnedArea::kPage));
  auto a = area.allocate(2 * PinnedArea::kPage);
  auto b = area.allocate(2 * PinnedArea::kPage);
  REQUIRE(a);
  REQUIRE(b);
  CHECK_FALSE(area.allocate(1));
  CHECK(area.release(*a));
  CHECK_FALSE(area.release(*a));  // twice
  CHECK_FALSE(area.release(*b + 1));  // not a block's start
  auto c = area.allocate(PinnedArea::kPage + 1);  // rounds up to two pages
  REQUIRE(c);
  CHECK(*c == *a);
  CHECK(area.in_use() == 4 * PinnedArea::kPage);
}

TEST_CASE("pinned area: blocks go from the top down, and the boundary follows the lowest") {
  const uint64_t begin = 4 * PinnedArea::kPage, size = 8 * PinnedArea::kPage;
  PinnedArea area(begin, size);
  CHECK(area.boundary() == begin + size);  // nothing live: the staging ring may use it all
  auto a = area.allocate(2 * PinnedArea::kPage);
  REQUIRE(a);
  CHECK(*a == begin + 6 * PinnedArea::kPage);
  auto b = area.allocate(PinnedArea::kPage);
  REQUIRE(b);
  CHECK(*b == begin + 5 * PinnedArea::kPage);
  CHECK(area.boundary() == *b);
  area.release(*b);
  CHECK(area.boundary() == *a);
  area.release(*a);
  CHECK(area.boundary() == begin + size);
}

TEST_CASE("pinned area: holds() accepts ranges inside one block only") {
  PinnedArea area(0, 8 * PinnedArea::kPage);
  auto a = area.allocate(PinnedArea::kPage);
  auto b = area.allocate(PinnedArea::kPage);
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(*b + PinnedArea::kPage == *a);  // b right below a
  CHECK(area.holds(*a, PinnedArea::kPage));
  CHECK(area.holds(*b + 100, 200));
  CHECK_FALSE(area.holds(*b + 100, PinnedArea::kPage));  // runs on into a
  CHECK_FALSE(area.holds(*b - 1, 2));                    // starts below b
  CHECK_FALSE(area.holds(*a + PinnedArea::kPage, 1));    // past the top block
  CHECK_FALSE(area.holds(*a, ~uint64_t{0}));             // no wrap-around
  area.release(*a);
  CHECK_FALSE(area.holds(*a, 1));  // freed
}
