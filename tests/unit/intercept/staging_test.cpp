// The guest's staging ring over its data area.
#include <map>
#include <random>

#include <catch2/catch.hpp>

#include "staging.h"

using vgpu::intercept::Staging;

TEST_CASE("staging buffers never overlap while live, in any release order") {
  Staging s(1 << 16);
  std::mt19937 rng(3);
  std::map<uint64_t, uint64_t> live;  // offset -> size
  for (int i = 0; i < 20000; ++i) {
    if (!live.empty() && (rng() % 3 == 0 || live.size() > 20)) {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      s.release(it->first);
      live.erase(it);
      continue;
    }
    const uint64_t size = 1 + rng() % 9000;
    auto off = s.try_alloc(size);
    if (!off) continue;
    REQUIRE(*off + size <= s.capacity());
    for (const auto& [o, n] : live) REQUIRE((*off + size <= o || o + n <= *off));
    live[*off] = size;
  }
  for (const auto& [o, n] : live) s.release(o);
  CHECK(s.empty());
  CHECK(s.try_alloc(s.capacity()).has_value());
}

TEST_CASE("a full ring refuses until the oldest buffer is released") {
  Staging s(4096);
  auto a = s.try_alloc(2048);
  auto b = s.try_alloc(2048);
  REQUIRE(a);
  REQUIRE(b);
  CHECK_FALSE(s.try_alloc(64));
  s.release(*b);  // out of order: space is reclaimed only in order
  CHECK_FALSE(s.try_alloc(64));
  s.release(*a);
  CHECK(s.try_alloc(4096));
  CHECK_FALSE(s.try_alloc(8192));
}

TEST_CASE("a copy moves in eighths of at least 256 KiB, at most a quarter of the ring") {
  Staging s(64 << 20);
  CHECK(s.chunk_for(1 << 20) == 256 << 10);      // small copies: 256 KiB pieces
  CHECK(s.chunk_for(16 << 20) == 2 << 20);       // an eighth
  CHECK(s.chunk_for(256ull << 20) == 16 << 20);  // a quarter of the ring at most
  Staging small(512 << 10);
  CHECK(small.chunk_for(1 << 20) == 128 << 10);  // the ring's quarter wins
}
