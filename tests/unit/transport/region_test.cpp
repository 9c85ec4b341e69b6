#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include <catch2/catch.hpp>

#include "vgpu/transport/region.h"

using namespace vgpu;
using namespace vgpu::transport;

TEST_CASE("a guest attaches to a region the host created and sees the same bytes") {
  RegionGeometry g;
  g.ring_size = 1u << 17;
  g.data_size = 1u << 20;
  std::unique_ptr<Region> host;
  REQUIRE(Region::create(g, &host) == Status::kSuccess);
  std::unique_ptr<Region> guest;
  std::string why;
  REQUIRE(Region::attach(dup(host->fd()), &guest, &why) == Status::kSuccess);
  CHECK(guest->geometry().ring_size == g.ring_size);
  CHECK(guest->data().size() == g.data_size);
  std::memcpy(guest->data().data(), "hello", 5);
  CHECK(std::memcmp(host->data().data(), "hello", 5) == 0);
  CHECK(host->header()->host_state == VGPU_HOST_READY);
}

TEST_CASE("invalid geometries are refused") {
  RegionGeometry g;
  g.ring_size = 3u << 16;  // not a power of two
  std::unique_ptr<Region> r;
  CHECK(Region::create(g, &r) == Status::kInvalidValue);
  g.ring_size = 1u << 12;  // smaller than two largest messages
  CHECK(Region::create(g, &r) == Status::kInvalidValue);
}

TEST_CASE("a guest refuses a region whose header is wrong") {
  RegionGeometry g;
  g.ring_size = 1u << 17;
  g.data_size = 1u << 20;
  std::unique_ptr<Region> host;
  REQUIRE(Region::create(g, &host) == Status::kSuccess);
  host->header()->ring_size = 12345;
  std::unique_ptr<Region> guest;
  std::string why;
  CHECK(Region::attach(dup(host->fd()), &guest, &why) == Status::kInsufficientDriver);
  CHECK_FALSE(why.empty());
}

TEST_CASE("the region's size is sealed") {
  RegionGeometry g;
  g.ring_size = 1u << 17;
  g.data_size = 1u << 20;
  std::unique_ptr<Region> host;
  REQUIRE(Region::create(g, &host) == Status::kSuccess);
  CHECK(ftruncate(host->fd(), 4096) != 0);
}
