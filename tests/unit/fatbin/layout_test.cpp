// Layouts parsed from real nvcc output against values derived by hand from
// the C++ ABI of fixtures/layouts.cu, in every compression mode, from the
// cubin and from the PTX.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "fixtures.h"

namespace vgpu::fatbin::test {
namespace {

struct ExpectedKernel {
  const char* name;
  std::vector<Param> params;  // {offset, size} in declaration order
  uint32_t param_bytes;
};

// Each parameter sits at the next multiple of its alignment; the total is the
// end of the last parameter (no rounding up).
const std::vector<ExpectedKernel> kKernels = {
    // char@0, short@2, int@4, double@8, const float*@16, char@24, long long@32 (8-aligned)
    {"_Z9k_scalarscsidPKfcx", {{0, 1}, {2, 2}, {4, 4}, {8, 8}, {16, 8}, {24, 1}, {32, 8}}, 40},
    // int@0; Padded {char; double; short} is 24 bytes aligned 8 -> @8; char@32
    {"_Z8k_structi6Paddedc", {{0, 4}, {8, 24}, {32, 1}}, 33},
    // char@0; float4 (16, align 16) @16; Aligned (16, align 16) @32; double*@48
    {"_Z8k_float4c6float47AlignedPd", {{0, 1}, {16, 16}, {32, 16}, {48, 8}}, 56},
    // WithArray {int; float[5]; char} is 28 bytes aligned 4 -> @0; short@28; float*@32
    {"_Z7k_array9WithArraysPf", {{0, 28}, {28, 2}, {32, 8}}, 40},
    {"_Z7k_emptyv", {}, 0},
    // Big {int[1500]} 6000 bytes @0; char@6000; double*@6008 (KPARAM_INFO_V2 in the cubin)
    {"_Z5k_big3BigcPd", {{0, 6000}, {6000, 1}, {6008, 8}}, 6016},
    // extern "C": unmangled. int@0, float@4
    {"k_c_linkage", {{0, 4}, {4, 4}}, 8},
};

std::vector<uint8_t> le_bytes(const void* p, size_t n) {
  std::vector<uint8_t> v(n);
  std::memcpy(v.data(), p, n);
  return v;
}

struct ExpectedVariable {
  const char* name;
  uint64_t size;
  bool constant;
  std::vector<uint8_t> init;  // empty: zero-filled
};

std::vector<ExpectedVariable> expected_variables() {
  const float coeffs[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  const unsigned long long big[3] = {1ull, 2ull, 0x1122334455667788ull};
  const int counter = 42;
  const short minus_two = -2;
  return {
      {"c_coeffs", 16, true, le_bytes(coeffs, sizeof coeffs)},
      {"c_zero", 32, true, {}},
      {"d_counter", 4, false, le_bytes(&counter, sizeof counter)},
      {"d_table", 128, false, {}},
      {"d_big", 24, false, le_bytes(big, sizeof big)},
      {"d_short", 2, false, le_bytes(&minus_two, sizeof minus_two)},
  };
}

void check_layouts(const Module& m) {
  CHECK(m.kernels.size() == kKernels.size());
  for (const ExpectedKernel& want : kKernels) {
    INFO("kernel " << want.name);
    const Kernel* k = m.find_kernel(want.name);
    REQUIRE(k != nullptr);
    CHECK(k->param_bytes == want.param_bytes);
    REQUIRE(k->params.size() == want.params.size());
    for (size_t i = 0; i < want.params.size(); ++i) {
      INFO("param " << i);
      CHECK(k->params[i].offset == want.params[i].offset);
      CHECK(k->params[i].size == want.params[i].size);
    }
  }
  const auto vars = expected_variables();
  CHECK(m.variables.size() == vars.size());
  for (const ExpectedVariable& want : vars) {
    INFO("variable " << want.name);
    const Variable* v = m.find_variable(want.name);
    REQUIRE(v != nullptr);
    CHECK(v->size == want.size);
    CHECK(v->constant == want.constant);
    CHECK(v->init == want.init);
  }
}

Module parse_fixture(const std::string& name) {
  INFO("fixture " << name);
  Module m;
  const auto bytes = load_fixture(name);
  const Error e = parse(bytes, &m);
  INFO(error_name(e));
  REQUIRE(e == Error::kNone);
  return m;
}

}  // namespace

TEST_CASE("fixtures cover every compression the parser handles", "[fatbin][layout]") {
  auto flags_of = [](const std::string& name, uint16_t kind) {
    for (const EntryInfo& e : list_entries(load_fixture(name))) {
      if (e.kind == kind) return e.flags & 0xA000;  // 0x8000 zstd, 0x2000 LZ4
    }
    FAIL("no entry of kind " << kind << " in " << name);
    return uint64_t{0};
  };
  CHECK(flags_of("default", 2) == 0);
  CHECK(flags_of("default", 1) == 0x8000);
  CHECK(flags_of("size", 2) == 0x8000);
  CHECK(flags_of("size", 1) == 0x8000);
  CHECK(flags_of("speed", 1) == 0x2000);
  CHECK(flags_of("none", 1) == 0);
  CHECK(flags_of("no_compress", 1) == 0);
  CHECK(flags_of("ptx_only_none", 1) == 0);
  CHECK(flags_of("ptx_only_speed", 1) == 0x2000);
  CHECK(list_entries(load_fixture("cubin_only")).size() == 1);
  CHECK(list_entries(load_fixture("ptx_only")).size() == 1);
}

TEST_CASE("every compression mode yields the hand-derived layouts", "[fatbin][layout]") {
  for (const std::string& name : kModeFixtures) {
    INFO("fixture " << name);
    check_layouts(parse_fixture(name));
  }
}

TEST_CASE("every compression mode yields identical modules", "[fatbin][layout]") {
  const Module reference = parse_fixture("default");
  for (const std::string& name : kModeFixtures) {
    INFO("fixture " << name);
    CHECK(same_module(reference, parse_fixture(name)));
  }
}

TEST_CASE("PTX alone yields what the cubin says", "[fatbin][layout][ptx]") {
  const Module cubin = parse_fixture("cubin_only");
  check_layouts(cubin);
  for (const std::string& name : kPtxFixtures) {
    INFO("fixture " << name);
    const Module ptx = parse_fixture(name);
    check_layouts(ptx);
    CHECK(same_module(cubin, ptx));
  }
}

TEST_CASE("error names are distinct", "[fatbin]") {
  std::vector<std::string_view> names;
  for (int e = 0; e <= static_cast<int>(Error::kConflict); ++e) names.push_back(error_name(static_cast<Error>(e)));
  std::sort(names.begin(), names.end());
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
}

}  // namespace vgpu::fatbin::test
