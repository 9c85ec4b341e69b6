// locate() and locate_prelinked(): on wrappers built here around fixture
// bytes, and on the real wrappers that nvcc-built objects linked into this
// test registered before main (captured by registration_stubs.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "fixtures.h"
#include "registration_stubs.h"

namespace vgpu::fatbin::test {
namespace {

struct Wrapper {  // __fatBinC_Wrapper_t
  int32_t magic = 0x466243b1;
  int32_t version = 1;
  const void* data = nullptr;
  const void* filename_or_fatbins = nullptr;
};

// 8-byte aligned copy, as the fat binary sits in a binary's .nv_fatbin.
struct AlignedBytes {
  explicit AlignedBytes(const std::vector<uint8_t>& b, size_t extra = 0)
      : words((b.size() + extra + 7) / 8, 0xEEEEEEEEEEEEEEEEull) {
    std::memcpy(words.data(), b.data(), b.size());
  }
  const void* data() const { return words.data(); }
  std::vector<uint64_t> words;
};

bool same_bytes(std::span<const uint8_t> s, const std::vector<uint8_t>& b) {
  return s.size() == b.size() && std::equal(s.begin(), s.end(), b.begin());
}

Module parse_ok(std::span<const uint8_t> bytes) {
  Module m;
  const Error e = parse(bytes, &m);
  INFO(error_name(e));
  REQUIRE(e == Error::kNone);
  return m;
}

// Everything a registration announced is in the module, with the same sizes.
void check_registered(const Registration& r, const Module& m) {
  for (const std::string& f : r.functions) {
    INFO("function " << f);
    CHECK(m.find_kernel(f) != nullptr);
  }
  for (const RegisteredVar& v : r.variables) {
    INFO("variable " << v.name);
    const Variable* mv = m.find_variable(v.name);
    REQUIRE(mv != nullptr);
    CHECK(mv->size == v.size);
    CHECK(mv->constant == v.constant);
  }
}

}  // namespace

TEST_CASE("locate: the exact span of the fat binary a wrapper points at", "[fatbin][locate]") {
  const auto bytes = load_fixture("default");
  const AlignedBytes mem(bytes, 4096);  // followed by unrelated bytes
  Wrapper w;
  w.data = mem.data();
  std::span<const uint8_t> s;
  REQUIRE(locate(&w, &s) == Error::kNone);
  CHECK(s.data() == mem.data());
  CHECK(same_bytes(s, bytes));
  std::vector<std::span<const uint8_t>> list;
  CHECK(locate_prelinked(&w, &list) == Error::kNone);
  CHECK(list.empty());
}

TEST_CASE("locate: bad wrappers", "[fatbin][locate]") {
  const AlignedBytes mem(load_fixture("default"));
  std::span<const uint8_t> s;
  Wrapper w;
  CHECK(locate(nullptr, &s) == Error::kBadMagic);
  CHECK(locate(&w, &s) == Error::kBadMagic);  // data is null
  w.data = mem.data();
  w.magic = 0x12345678;
  CHECK(locate(&w, &s) == Error::kBadMagic);
  w.magic = 0x466243b1;
  w.version = 3;
  CHECK(locate(&w, &s) == Error::kBadVersion);
  w.version = 1;
  const uint64_t not_fatbin[2] = {0x0010000112345678ull, 0};
  w.data = not_fatbin;
  CHECK(locate(&w, &s) == Error::kBadMagic);
  const uint64_t bad_version[2] = {0x00100002ba55ed50ull, 0};
  w.data = bad_version;
  CHECK(locate(&w, &s) == Error::kBadVersion);
  const uint64_t huge[2] = {0x00100001ba55ed50ull, ~0ull};
  w.data = huge;
  CHECK(locate(&w, &s) == Error::kTooLarge);
}

TEST_CASE("locate_prelinked: a version 2 wrapper's NULL-terminated list", "[fatbin][locate]") {
  const auto a = load_fixture("cubin_only"), b = load_fixture("ptx_only");
  const AlignedBytes ma(a), mb(b);
  const void* list[] = {ma.data(), mb.data(), nullptr};
  const auto empty = make_fatbin({});
  const AlignedBytes linked(empty);
  Wrapper w;
  w.version = 2;
  w.data = linked.data();
  w.filename_or_fatbins = list;
  std::span<const uint8_t> s;
  REQUIRE(locate(&w, &s) == Error::kNone);
  CHECK(s.size() == 16);
  std::vector<std::span<const uint8_t>> spans;
  REQUIRE(locate_prelinked(&w, &spans) == Error::kNone);
  REQUIRE(spans.size() == 2);
  CHECK(same_bytes(spans[0], a));
  CHECK(same_bytes(spans[1], b));
  const void* bad[] = {ma.data(), list, nullptr};  // second is not a fat binary
  w.filename_or_fatbins = bad;
  CHECK(locate_prelinked(&w, &spans) == Error::kBadMagic);
}

TEST_CASE("real registration, whole program (version 1)", "[fatbin][locate][registration]") {
  const Registration* r = registration_of("_Z9k_scalarscsidPKfcx");
  REQUIRE(r != nullptr);
  CHECK(r->functions.size() == 7);
  CHECK(r->variables.size() == 6);
  std::span<const uint8_t> s;
  REQUIRE(locate(r->wrapper, &s) == Error::kNone);
  // nvcc embeds exactly what -fatbin writes for the same options.
  CHECK(same_bytes(s, load_fixture("default")));
  check_registered(*r, parse_ok(s));
}

TEST_CASE("real registration, relocatable device code (version 2)", "[fatbin][locate][registration]") {
  const Registration* r = registration_of("_Z9rdc_ka_smPid");
  REQUIRE(r != nullptr);
  int32_t version = 0;
  std::memcpy(&version, static_cast<const char*>(r->wrapper) + 4, sizeof version);
  CHECK(version == 2);
  CHECK(r->functions.size() == 2);  // both objects register into the linked handle

  std::span<const uint8_t> s;
  REQUIRE(locate(r->wrapper, &s) == Error::kNone);
  const Module linked = parse_ok(s);
  check_registered(*r, linked);
  CHECK(linked.find_kernel("_Z9rdc_ka_smPid")->param_bytes == 16);  // int*@0, double@8
  CHECK(linked.find_kernel("_Z9rdc_kb_smPfc")->param_bytes == 9);   // float*@0, char@8

  std::vector<std::span<const uint8_t>> objects;
  REQUIRE(locate_prelinked(r->wrapper, &objects) == Error::kNone);
  REQUIRE(objects.size() == 2);
  size_t kernels = 0;
  for (auto object : objects) {
    const Module m = parse_ok(object);
    kernels += m.kernels.size();
    for (const Kernel& k : m.kernels) CHECK(linked.find_kernel(k.name)->param_bytes == k.param_bytes);
  }
  CHECK(kernels == 2);
}

TEST_CASE("real registration, relocatable PTX only: kernels are in the prelinked list", "[fatbin][locate][registration]") {
  const Registration* r = registration_of("_Z10rdc_ka_ptxPid");
  REQUIRE(r != nullptr);
  std::span<const uint8_t> s;
  REQUIRE(locate(r->wrapper, &s) == Error::kNone);
  Module m;
  CHECK(parse(s, &m) == Error::kNoKernelMetadata);  // nvlink had no cubin to link

  std::vector<std::span<const uint8_t>> objects;
  REQUIRE(locate_prelinked(r->wrapper, &objects) == Error::kNone);
  REQUIRE(objects.size() == 2);
  Module all;
  for (auto object : objects) {
    const Module one = parse_ok(object);
    all.kernels.insert(all.kernels.end(), one.kernels.begin(), one.kernels.end());
    all.variables.insert(all.variables.end(), one.variables.begin(), one.variables.end());
  }
  check_registered(*r, all);
  const Variable* weights = all.find_variable("rdc_weights_ptx");
  REQUIRE(weights != nullptr);
  const float want[2] = {1.5f, 2.5f};
  REQUIRE(weights->init.size() == sizeof want);
  CHECK(std::memcmp(weights->init.data(), want, sizeof want) == 0);
}

}  // namespace vgpu::fatbin::test
