// Thread block clusters fixed at compile time (__cluster_dims__), read from
// real nvcc output: the cubin's attribute and the PTX directive give the same
// shape, and a kernel without one has none.
#include <catch2/catch.hpp>

#include <array>

#include "fixtures.h"

namespace vgpu::fatbin::test {
namespace {

std::array<uint32_t, 3> shape(const Module& m, const std::string& name) {
  for (const Kernel& k : m.kernels) {
    if (k.name == name) return {k.cluster[0], k.cluster[1], k.cluster[2]};
  }
  FAIL("no kernel " << name);
  return {};
}

Error parse_ptx(const std::string& ptx, Module* m) { return parse(ptx_fatbin(ptx), m); }

std::string entry_with(const std::string& directives) {
  return ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n" +
         directives + "\n{\n  ret;\n}\n";
}

}  // namespace

TEST_CASE("a kernel's compile-time cluster shape comes from its cubin or its PTX", "[fatbin]") {
  for (const char* fixture : {"clusters_cubin", "clusters_ptx"}) {
    INFO(fixture);
    Module m;
    REQUIRE(parse(load_fixture(fixture), &m) == Error::kNone);
    CHECK(shape(m, "_Z11fixed_shapePi") == std::array<uint32_t, 3>{2, 2, 1});
    CHECK(shape(m, "_Z12chosen_shapePi") == std::array<uint32_t, 3>{0, 0, 0});
  }
}

TEST_CASE("PTX cluster directives: shorter forms, and shapes no device has", "[fatbin][ptx]") {
  Module m;
  REQUIRE(parse_ptx(entry_with(".explicitcluster\n.reqnctapercluster 4"), &m) == Error::kNone);
  REQUIRE(m.kernels.size() == 1);
  CHECK(m.kernels[0].cluster[0] == 4);
  CHECK(m.kernels[0].cluster[1] == 1);
  CHECK(m.kernels[0].cluster[2] == 1);
  for (const char* bad : {".reqnctapercluster 0, 1, 1", ".reqnctapercluster 17",
                          ".reqnctapercluster 4, 4, 2", ".reqnctapercluster x"}) {
    INFO(bad);
    Module n;
    CHECK(parse_ptx(entry_with(bad), &n) == Error::kBadPtx);
  }
}

}  // namespace vgpu::fatbin::test
