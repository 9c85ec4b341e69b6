// Which image of a fat binary a device of a given compute capability runs,
// as NVIDIA's driver chooses (cudaFuncGetAttributes reports it, and CUB picks
// its tuning by it): real nvcc output of several architectures.
#include <catch2/catch.hpp>

#include "fixtures.h"

namespace vgpu::fatbin::test {
namespace {

Module parsed(const std::string& fixture) {
  Module m;
  REQUIRE(parse(load_fixture(fixture), &m) == Error::kNone);
  return m;
}

ImageChoice choice(const Module& m, uint32_t cc) {
  ImageChoice c;
  INFO("compute capability " << cc);
  REQUIRE(choose_image(m, cc, &c));
  return c;
}

}  // namespace

TEST_CASE("a fat binary remembers the architectures of its images") {
  const Module lab = parsed("lab_archs");
  CHECK(lab.cubin_archs == std::vector<uint32_t>{75, 86});
  CHECK(lab.ptx_archs == std::vector<uint32_t>{75});
  const Module ptx = parsed("ptx_only");
  CHECK(ptx.cubin_archs.empty());
  CHECK(ptx.ptx_archs == std::vector<uint32_t>{90});
}

TEST_CASE("a device runs the best cubin of its major version, else compiles the newest PTX it can") {
  const Module lab = parsed("lab_archs");
  // A cubin of the device's own architecture.
  CHECK(choice(lab, 75).binary_version == 75);
  CHECK(choice(lab, 86).binary_version == 86);
  // Same major version, older minor: the cubin runs as it is.
  CHECK(choice(lab, 89).binary_version == 86);
  CHECK(choice(lab, 89).ptx_version == 86);
  // A newer major version (Hopper), or an older minor than any cubin's
  // (8.0 against sm_86): the PTX, compiled for the device.
  CHECK(choice(lab, 90).ptx_version == 75);
  CHECK(choice(lab, 90).binary_version == 90);
  CHECK(choice(lab, 80).ptx_version == 75);
  CHECK(choice(lab, 80).binary_version == 80);
  // Older than every image: nothing runs.
  ImageChoice none;
  CHECK_FALSE(choose_image(lab, 70, &none));

  const Module both = parsed("default");  // sm_90 cubin + compute_90 PTX
  CHECK(choice(both, 90).binary_version == 90);
  CHECK(choice(both, 100).ptx_version == 90);
  CHECK(choice(both, 100).binary_version == 100);
}

}  // namespace vgpu::fatbin::test
