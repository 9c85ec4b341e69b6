// Which GPU a VM goes to (host/placement.h): spread and pack over a snapshot
// of loads, and a cap that fits no GPU.
#include <catch2/catch.hpp>

#include "vgpu/host/placement.h"

using namespace vgpu;
using namespace vgpu::host;

namespace {
constexpr uint64_t kGiB = 1ull << 30;
}

TEST_CASE("placement: spread takes the least committed weight, then the most free memory") {
  std::vector<GpuLoad> gpus(3);
  for (GpuLoad& g : gpus) g.total_memory = 16 * kGiB;
  gpus[0].committed_weight = 2;
  gpus[1].committed_weight = 1;
  gpus[2].committed_weight = 1;
  gpus[1].committed_memory = 4 * kGiB;
  size_t out = 99;
  REQUIRE(choose_gpu(PlacementPolicy::kSpread, gpus, 0, &out).ok());
  CHECK(out == 2);  // weight ties with 1; 2 has more free memory
  gpus[2].committed_memory = 4 * kGiB;
  REQUIRE(choose_gpu(PlacementPolicy::kSpread, gpus, 0, &out).ok());
  CHECK(out == 1);  // a full tie: the lower index
  // A cap that only GPU 0 has room for goes there, whatever its weight.
  gpus[1].committed_memory = gpus[2].committed_memory = 12 * kGiB;
  REQUIRE(choose_gpu(PlacementPolicy::kSpread, gpus, 8 * kGiB, &out).ok());
  CHECK(out == 0);
}

TEST_CASE("placement: pack fills the first GPU the cap fits before the next") {
  std::vector<GpuLoad> gpus(2);
  for (GpuLoad& g : gpus) g.total_memory = 8 * kGiB;
  size_t out = 99;
  REQUIRE(choose_gpu(PlacementPolicy::kPack, gpus, 4 * kGiB, &out).ok());
  CHECK(out == 0);
  gpus[0].committed_memory = 4 * kGiB;
  gpus[0].committed_weight = 10;  // weight does not matter to pack
  REQUIRE(choose_gpu(PlacementPolicy::kPack, gpus, 4 * kGiB, &out).ok());
  CHECK(out == 0);
  gpus[0].committed_memory = 8 * kGiB;
  REQUIRE(choose_gpu(PlacementPolicy::kPack, gpus, 4 * kGiB, &out).ok());
  CHECK(out == 1);
}

TEST_CASE("placement: a cap that fits no GPU is refused by name, and nothing is chosen") {
  std::vector<GpuLoad> gpus(2);
  gpus[0].total_memory = 8 * kGiB;
  gpus[1].total_memory = 8 * kGiB;
  gpus[1].committed_memory = 6 * kGiB;
  size_t out = 99;
  for (PlacementPolicy p : {PlacementPolicy::kSpread, PlacementPolicy::kPack}) {
    const Result r = choose_gpu(p, gpus, 9 * kGiB, &out);
    CHECK(r.code() == Result::Code::kUnavailable);
    CHECK_THAT(r.message(), Catch::Contains("9216 MiB") && Catch::Contains("8192 MiB"));
    CHECK(out == 99);
  }
  // Without a cap a VM fits anywhere, a full GPU too.
  gpus[0].committed_memory = 8 * kGiB;
  REQUIRE(choose_gpu(PlacementPolicy::kPack, gpus, 0, &out).ok());
  CHECK(out == 0);
}

TEST_CASE("placement: the policy's name is spread or pack") {
  PlacementPolicy p = PlacementPolicy::kSpread;
  REQUIRE(policy::parse_placement("pack", &p).ok());
  CHECK(p == PlacementPolicy::kPack);
  CHECK(policy::placement_name(p) == "pack");
  const Result r = policy::parse_placement("Spread", &p);
  CHECK(r.code() == Result::Code::kInvalidArgument);
  CHECK(p == PlacementPolicy::kPack);
}
