// The PTX reader and the container on hand-written inputs: syntax nvcc emits
// but the fixtures do not reach, and malformed input.
#include <catch2/catch.hpp>

#include <string>

#include "fixtures.h"

namespace vgpu::fatbin::test {
namespace {

Error parse_ptx(const std::string& ptx, Module* m) { return parse(ptx_fatbin(ptx), m); }

Module ptx_ok(const std::string& ptx) {
  Module m;
  const Error e = parse_ptx(ptx, &m);
  INFO(error_name(e) << "\n" << ptx);
  REQUIRE(e == Error::kNone);
  return m;
}

std::vector<std::pair<uint32_t, uint32_t>> layout(const Kernel& k) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const Param& p : k.params) out.emplace_back(p.offset, p.size);
  return out;
}

using Layout = std::vector<std::pair<uint32_t, uint32_t>>;

}  // namespace

TEST_CASE("PTX parameters: qualifiers, vectors, arrays", "[fatbin][ptx]") {
  const Module m = ptx_ok(R"(
.version 9.0
.target sm_90
.address_size 64
// a comment with .entry fake( .param .u8 x )
/* and a block comment: .global .u32 fake; { */
.visible .entry k1(
  .param .u8 k1_p0,
  .param .u64 .ptr .global .align 16 k1_p1,   // .align after .ptr is the pointee's
  .param .align 4 .b8 k1_p2[2][3],
  .param .v2 .f32 k1_p3,
  .param .align 16 .b8 k1_p4[4],
  .param .f64 k1_p5
)
.maxntid 128, 1, 1
{
  .reg .b64 %rd<3>;
  ret;
}
.entry k2 { ret; }
.entry k3() { ret; }
)");
  const Kernel* k1 = m.find_kernel("k1");
  REQUIRE(k1 != nullptr);
  // u8@0; u64@8 (8-aligned); b8[6] align 4 @16; v2.f32 (8, align 8) @24; b8[4] align 16 @32; f64@40
  CHECK(layout(*k1) == Layout{{0, 1}, {8, 8}, {16, 6}, {24, 8}, {32, 4}, {40, 8}});
  CHECK(k1->param_bytes == 48);
  REQUIRE(m.find_kernel("k2") != nullptr);
  CHECK(m.find_kernel("k2")->params.empty());
  REQUIRE(m.find_kernel("k3") != nullptr);
  CHECK(m.find_kernel("k3")->param_bytes == 0);
  CHECK(m.find_kernel("fake") == nullptr);
  CHECK(m.variables.empty());
}

TEST_CASE("PTX variables: sizes, initializers, what is skipped", "[fatbin][ptx]") {
  const Module m = ptx_ok(R"(
.version 9.0
.target sm_90
.file 1 "/tmp/{odd}(path).cu"
.extern .global .align 4 .u32 ext_var;
.global .texref tex;
.extern .func (.param .b32 ret) f(.param .b64 .ptr .global .align 8 p);
.visible .global .attribute(.managed) .align 4 .u32 managed = 5;
.global .align 4 .f32 one = 0f3F800000;
.const .align 8 .f64 two = 0d4000000000000000;
.global .align 2 .s16 neg = -2;
.global .align 4 .u32 hex[2] = {0x10, 0b11};
.global .align 8 .u64 addr = generic(managed)+4;
.global .align 4 .b8 partial[6] = {1, 2};
.global .align 1 .b8 unsized[] = {9, 8, 7};
.global .align 4 .v2 .u32 vec[2] = {{1, 2}, {3, 4}};
.const .align 4 .b8 zeros[8] = {0, 0, 0};
.global .align 8 .b8 big[1048576];
.visible .func g(.param .b64 .ptr .global .align 8 q) { .global .u32 inner; ret; }
)");
  auto var = [&](const char* name) {
    const Variable* v = m.find_variable(name);
    INFO(name);
    REQUIRE(v != nullptr);
    return *v;
  };
  using B = std::vector<uint8_t>;
  CHECK(m.find_variable("ext_var") == nullptr);
  CHECK(m.find_variable("tex") == nullptr);
  CHECK(m.find_variable("p") == nullptr);
  CHECK(m.find_variable("q") == nullptr);
  CHECK(m.find_variable("inner") == nullptr);
  CHECK(var("managed").init == B{5, 0, 0, 0});
  CHECK(var("one").init == B{0x00, 0x00, 0x80, 0x3f});
  CHECK(var("two").constant);
  CHECK(var("two").init == B{0, 0, 0, 0, 0, 0, 0, 0x40});
  CHECK(var("neg").init == B{0xfe, 0xff});
  CHECK(var("hex").init == B{0x10, 0, 0, 0, 3, 0, 0, 0});
  CHECK(var("addr").size == 8);
  CHECK(var("addr").init.empty());  // an address: not known here
  CHECK(var("partial").init == B{1, 2, 0, 0, 0, 0});
  CHECK(var("unsized").size == 3);
  CHECK(var("unsized").init == B{9, 8, 7});
  CHECK(var("vec").size == 16);
  CHECK(var("vec").init == B{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0});
  CHECK(var("zeros").init.empty());
  CHECK(var("big").size == 1048576);
  CHECK(var("big").init.empty());
}

TEST_CASE("malformed PTX is refused", "[fatbin][ptx]") {
  const char* head = ".version 9.0\n.target sm_90\n";
  struct Case {
    const char* ptx;
    Error want;
  };
  const Case cases[] = {
      {".entry k(.param .u32 a", Error::kBadPtx},
      {".entry k(.param .u32 a .param .u32 b) {}", Error::kBadPtx},
      {".entry k(.param a) {}", Error::kBadPtx},
      {".entry k(.param .u32) {}", Error::kBadPtx},
      {".entry k(.param .pred p) {}", Error::kBadPtx},
      {".entry k(.param .align 3 .b8 a[4]) {}", Error::kBadPtx},
      {".entry k(.param .b8 a[0]) {}", Error::kBadPtx},
      {".entry k(.param .b8 a[40000]) {}", Error::kTooLarge},
      {".entry k(.param .b8 a[32760], .param .u64 b) {}", Error::kTooLarge},
      {".entry k(.param .b8 a[99999999999999999999]) {}", Error::kBadPtx},
      {".entry 7k() {}", Error::kBadPtx},
      {".entry k() { ret;", Error::kBadPtx},
      {".entry k() { ret; } }", Error::kBadPtx},
      {".global .u32 x = {1, 2};", Error::kBadPtx},
      {".global .u32 x[2] = {1, 2, 3};", Error::kBadPtx},
      {".global .u32 x = 1", Error::kBadPtx},
      {".global .u32 x = -;", Error::kBadPtx},
      {".global .u32 x, y;", Error::kBadPtx},
      {".global .b8 x[];", Error::kBadPtx},
      {".global .b8 x[4294967296][4294967296];", Error::kTooLarge},
      {".global x;", Error::kBadPtx},
      {".global .align 5 .u32 x;", Error::kBadPtx},
  };
  for (const Case& c : cases) {
    Module m;
    INFO(c.ptx);
    CHECK(parse_ptx(std::string(head) + c.ptx, &m) == c.want);
  }
}

TEST_CASE("a kernel with more than kMaxParams parameters is refused", "[fatbin][ptx]") {
  std::string ptx = ".entry k(";
  for (uint32_t i = 0; i <= kMaxParams; ++i) ptx += (i ? ", .param .u8 p" : ".param .u8 p") + std::to_string(i);
  ptx += ") {}";
  Module m;
  CHECK(parse_ptx(ptx, &m) == Error::kTooLarge);
}

TEST_CASE("images that disagree are a conflict", "[fatbin][ptx]") {
  const std::string a = ".entry k(.param .u32 x) {}\n.visible .global .u32 v;";
  const std::string same = ".entry k(.param .u32 x) {}\n.visible .global .u32 v = 1;";  // init may differ
  const std::string other_kernel = ".entry k(.param .u64 x) {}";
  const std::string other_var = ".visible .const .u32 v;";
  auto two = [](const std::string& x, const std::string& y) {
    return make_fatbin({EntrySpec{1, {x.begin(), x.end()}}, EntrySpec{1, {y.begin(), y.end()}}});
  };
  Module m;
  CHECK(parse(two(a, same), &m) == Error::kNone);
  CHECK(m.kernels.size() == 1);
  CHECK(m.find_variable("v")->init.empty());  // the first description is kept
  CHECK(parse(two(a, other_kernel), &m) == Error::kConflict);
  CHECK(parse(two(a, other_var), &m) == Error::kConflict);

  // Without .visible a name is its object's own (printf's $str, a static variable): two
  // objects of one program (-rdc=true) may each have one, of different sizes.
  const std::string own_a = ".global .align 1 .b8 $str[4] = {104, 105, 10, 0};";
  const std::string own_b = ".global .align 1 .b8 $str[7] = {104, 101, 108, 108, 111, 10, 0};";
  REQUIRE(parse(two(own_a, own_b), &m) == Error::kNone);
  CHECK(m.find_variable("$str")->size == 4);  // the first
}

TEST_CASE("container: headers, entry kinds, trailing bytes", "[fatbin][container]") {
  const std::string ptx = ".entry k(.param .u32 x) {}";
  Module m;
  SECTION("bytes after the announced size are ignored") {
    auto b = ptx_fatbin(ptx);
    const size_t size = b.size();
    CHECK(announced_size(b) == size);
    b.insert(b.end(), 100, 0xEE);
    CHECK(parse(b, &m) == Error::kNone);
    CHECK(m.find_kernel("k") != nullptr);
    CHECK(announced_size(b) == size);  // what a host keeps of it
    CHECK(announced_size(std::span(b).first(12)) == 12);
  }
  SECTION("no entries, or only unknown kinds: no metadata") {
    CHECK(parse(make_fatbin({}), &m) == Error::kNoKernelMetadata);
    CHECK(parse(make_fatbin({EntrySpec{4, {1, 2, 3}}, EntrySpec{8, {}}}), &m) == Error::kNoKernelMetadata);
  }
  SECTION("bad headers") {
    auto b = ptx_fatbin(ptx);
    auto with = [&](size_t off, size_t width, uint64_t v) {
      auto c = b;
      put_le(&c, off, width, v);
      return parse(c, &m);
    };
    CHECK(parse({}, &m) == Error::kTruncated);
    CHECK(parse(std::span(b).first(15), &m) == Error::kTruncated);
    CHECK(with(0, 4, 0x466243b1) == Error::kBadMagic);
    CHECK(with(4, 2, 2) == Error::kBadVersion);
    CHECK(with(6, 2, 8) == Error::kBadEntry);
    CHECK(with(8, 8, b.size()) == Error::kTruncated);
    CHECK(with(8, 8, ~uint64_t{0}) == Error::kTruncated);
    CHECK(with(16 + 4, 4, 8) == Error::kBadEntry);          // entry header smaller than 64
    CHECK(with(16 + 4, 4, 0xffffffff) == Error::kTruncated);
    CHECK(with(16 + 8, 8, ~uint64_t{0} - 10) == Error::kTruncated);
    CHECK(with(16 + 40, 8, 0xA011) == Error::kBadEntry);    // zstd and LZ4 at once
    CHECK(with(16 + 40, 8, 0x8011) == Error::kBadEntry);    // compressed, compressed size 0
  }
  SECTION("compressed sizes are bounded") {
    auto b = ptx_fatbin(ptx);
    put_le(&b, 16 + 40, 8, 0x2011);  // LZ4
    put_le(&b, 16 + 16, 4, ptx.size());
    put_le(&b, 16 + 56, 8, kMaxImageBytes + 1);
    CHECK(parse(b, &m) == Error::kTooLarge);
    put_le(&b, 16 + 56, 8, 0);
    CHECK(parse(b, &m) == Error::kBadEntry);
    put_le(&b, 16 + 56, 8, 1000);
    CHECK(parse(b, &m) == Error::kDecompress);  // not LZ4 data
    put_le(&b, 16 + 16, 4, ptx.size() + 1);
    CHECK(parse(b, &m) == Error::kBadEntry);    // compressed size past the payload
  }
  SECTION("null output") { CHECK(parse(ptx_fatbin(ptx), nullptr) != Error::kNone); }
}

TEST_CASE("names are looked up through an index; a module's host bytes grow with it", "[fatbin]") {
  std::string ptx;
  constexpr int kKernels = 3000;
  for (int i = 0; i < kKernels; ++i)
    ptx += ".entry kernel_with_a_long_name_" + std::to_string(i) + "(.param .u64 p, .param .u32 n) {}\n";
  ptx += ".global .align 4 .u32 counter_a;\n.global .align 4 .u32 counter_b = 7;\n";
  const Module m = ptx_ok(ptx);
  REQUIRE(m.kernels.size() == kKernels);
  CHECK(m.kernel_index.size() == kKernels);
  CHECK(m.variable_index.size() == 2);
  for (int i : {0, 1, 1234, kKernels - 1}) {
    const std::string name = "kernel_with_a_long_name_" + std::to_string(i);
    const Kernel* k = m.find_kernel(name);
    REQUIRE(k != nullptr);
    CHECK(k->name == name);
    CHECK(layout(*k) == Layout{{0, 8}, {8, 4}});
  }
  CHECK(m.find_kernel("kernel_with_a_long_name_3000") == nullptr);
  CHECK(m.find_variable("counter_b") != nullptr);
  CHECK(m.find_variable("counter_c") == nullptr);
  // A copy keeps working lookups (the index holds positions, not pointers).
  const Module copy = m;
  CHECK(copy.find_kernel("kernel_with_a_long_name_42") == &copy.kernels[42]);

  const Module small = ptx_ok(".entry k(.param .u32 x) {}");
  // Each kernel holds its name twice (vector and index) and its parameters.
  CHECK(host_bytes(m) > host_bytes(small) + kKernels * 2 * std::string("kernel_with_a_long_name_0").size());
}

}  // namespace vgpu::fatbin::test

namespace vgpu::fatbin::test {

TEST_CASE("ptx_text: the PTX of the lowest architecture, decompressed; none in a cubin-only binary",
          "[fatbin][ptx]") {
  for (const std::string& name : kModeFixtures) {  // cubin + PTX, every compression mode
    SECTION(name) {
      std::string text;
      REQUIRE(ptx_text(load_fixture(name), 64u << 20, &text) == Error::kNone);
      CHECK(text.find(".target sm_90") != std::string::npos);
      CHECK(text.find(".entry") != std::string::npos);
      CHECK(text.find('\0') == std::string::npos);
      // The bound is on the decompressed text.
      std::string small;
      CHECK(ptx_text(load_fixture(name), text.size() - 1, &small) == Error::kTooLarge);
    }
  }
  std::string text;
  CHECK(ptx_text(load_fixture("cubin_only"), 64u << 20, &text) == Error::kNoKernelMetadata);
  REQUIRE(ptx_text(load_fixture("lab_archs"), 64u << 20, &text) == Error::kNone);
  CHECK(text.find(".target sm_75") != std::string::npos);
  const std::string hand = ".version 9.0\n.target sm_80\n.address_size 64\n";
  REQUIRE(ptx_text(ptx_fatbin(hand), 64u << 20, &text) == Error::kNone);
  CHECK(text == hand);
  // Garbage is an error, never a crash.
  const std::vector<uint8_t> junk(100, 0xab);
  CHECK(ptx_text(junk, 64u << 20, &text) != Error::kNone);
}

}  // namespace vgpu::fatbin::test
