// A kernel's __launch_bounds__ thread count, read from real nvcc output (the
// cubin's EIATTR_MAX_THREADS, PTX's .maxntid) and from PTX directives. A
// host that runs PTX (the sim's interpreter) must hold launches to the PTX's
// bound, which libraries tune per architecture.
#include <catch2/catch.hpp>

#include "fixtures.h"

namespace vgpu::fatbin::test {
namespace {

uint32_t bound(const Module& m, std::string_view name) {
  const Kernel* k = m.find_kernel(name);
  if (!k) FAIL("no kernel " << name);
  return k ? k->max_threads : 0;
}

std::string entry_with(const std::string& directives) {
  return ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n" +
         directives + "\n{\n  ret;\n}\n";
}

}  // namespace

TEST_CASE("__launch_bounds__ comes from the cubin, or from the PTX a host without the GPU runs",
          "[fatbin]") {
  struct Case {
    const char* fixture;
    uint32_t tuned;  // the per-architecture bound that must be kept
  };
  // sm_75 cubin only: its bound. compute_90 PTX only: the PTX's. Both: the
  // PTX's, though the cubin was read first.
  for (const Case& c : {Case{"bounds_cubin_75", 512}, Case{"bounds_ptx_90", 128},
                        Case{"bounds_cubin_75_ptx_90", 128}}) {
    INFO(c.fixture);
    Module m;
    REQUIRE(parse(load_fixture(c.fixture), &m) == Error::kNone);
    CHECK(bound(m, "_Z11fixed_boundPi") == 96);
    CHECK(bound(m, "_Z11tuned_boundPi") == c.tuned);
    CHECK(bound(m, "_Z8no_boundPi") == 0);
  }
}

TEST_CASE("PTX thread bounds: .maxntid and .reqntid in their forms; malformed ones refused",
          "[fatbin][ptx]") {
  struct Case {
    const char* directives;
    uint32_t threads;
  };
  for (const Case& c : {Case{".maxntid 16, 8, 1", 128}, Case{".maxntid 256", 256},
                        Case{".reqntid 64, 2", 128}, Case{".maxntid 256\n.reqntid 32", 32},
                        Case{".minnctapersm 4", 0}, Case{".maxntid 4096, 4096, 4096", kMaxThreadBound}}) {
    INFO(c.directives);
    Module m;
    REQUIRE(parse(ptx_fatbin(entry_with(c.directives)), &m) == Error::kNone);
    REQUIRE(m.kernels.size() == 1);
    CHECK(m.kernels[0].max_threads == c.threads);
  }
  for (const char* bad : {".maxntid 0", ".maxntid x", ".reqntid 8, 0", ".maxntid 2000000"}) {
    INFO(bad);
    Module m;
    CHECK(parse(ptx_fatbin(entry_with(bad)), &m) == Error::kBadPtx);
  }
}

}  // namespace vgpu::fatbin::test
