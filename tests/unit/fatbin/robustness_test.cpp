// parse() on corrupted real fixtures: truncations, bit flips, header and ELF
// fields set to huge or overlapping values, odd entry counts. Each call must
// return an error or a sane module; the sanitizers catch anything else. The
// random cases use a fixed seed, so a failure reproduces.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <string>

#include "fixtures.h"

namespace vgpu::fatbin::test {
namespace {

// An error, or a module whose numbers respect the documented bounds.
bool sane(std::span<const uint8_t> bytes, Error* result = nullptr) {
  Module m;
  const Error e = parse(bytes, &m);
  if (result) *result = e;
  if (e != Error::kNone) return true;
  for (const Kernel& k : m.kernels) {
    if (k.params.size() > kMaxParams || k.param_bytes > kMaxParamBytes) return false;
    for (const Param& p : k.params) {
      if (p.offset + p.size > k.param_bytes) return false;
    }
  }
  for (const Variable& v : m.variables) {
    if (!v.init.empty() && v.init.size() != v.size) return false;
  }
  return true;
}

// Values worth writing into a size or offset field of `width` bytes.
std::vector<uint64_t> interesting(uint64_t original, uint64_t image_size, size_t width) {
  std::vector<uint64_t> v = {0, 1, 8, 64, 0xff, 0xffff, 0x10000, 0xffffffff, 1ull << 63, ~0ull,
                             original - 1, original + 1, image_size - 1, image_size + 1, kMaxImageBytes + 1};
  const uint64_t mask = width == 8 ? ~0ull : (1ull << (8 * width)) - 1;
  for (uint64_t& x : v) x &= mask;
  return v;
}

struct Field {
  size_t at;
  size_t width;
};

// Every size, offset and flag field of the fat binary header and entry headers.
std::vector<Field> container_fields(const std::vector<uint8_t>& fatbin) {
  std::vector<Field> f = {{6, 2}, {8, 8}};
  for (const EntryInfo& e : list_entries(fatbin)) {
    for (Field x : {Field{0, 2}, Field{4, 4}, Field{8, 8}, Field{16, 4}, Field{20, 4}, Field{32, 4},
                    Field{36, 4}, Field{40, 8}, Field{56, 8}}) {
      f.push_back({e.header + x.at, x.width});
    }
  }
  return f;
}

// Every size, offset, count and index field of the raw cubin's ELF header,
// section headers and symbols.
std::vector<Field> elf_fields(const std::vector<uint8_t>& fatbin) {
  const CubinMap c = map_cubin(fatbin);
  std::vector<Field> f;
  for (Field x : {Field{0x20, 8}, Field{0x28, 8}, Field{0x3a, 2}, Field{0x3c, 2}, Field{0x3e, 2}}) {
    f.push_back({c.base + x.at, x.width});
  }
  for (const SectionInfo& s : c.sections) {
    for (Field x : {Field{0, 4}, Field{4, 4}, Field{24, 8}, Field{32, 8}, Field{40, 4}, Field{44, 4}, Field{56, 8}}) {
      f.push_back({s.header + x.at, x.width});
    }
    if (s.type == 2) {  // symbols: name, info, other, shndx, value, size
      for (uint64_t sym = 0; sym < s.size / 24; ++sym) {
        const size_t at = c.base + s.offset + 24 * sym;
        for (Field x : {Field{0, 4}, Field{4, 1}, Field{5, 1}, Field{6, 2}, Field{8, 8}, Field{16, 8}}) {
          f.push_back({at + x.at, x.width});
        }
      }
    }
  }
  return f;
}

}  // namespace

TEST_CASE("robustness: truncated fat binaries", "[fatbin][robustness]") {
  for (const char* name : {"default", "size", "speed"}) {
    const auto b = load_fixture(name);
    for (size_t len = 0; len <= b.size(); len += (len < 512 ? 1 : 61)) {
      INFO(name << " length " << len);
      REQUIRE(sane(std::span(b).first(len)));
    }
  }
}

TEST_CASE("robustness: every prefix of the raw cubin, as an image", "[fatbin][robustness]") {
  const auto b = load_fixture("cubin_only");
  const EntryInfo e = list_entries(b).at(0);
  const std::vector<uint8_t> image(b.begin() + e.payload(), b.begin() + e.payload() + e.size);
  for (size_t len = 0; len <= image.size(); ++len) {
    INFO("length " << len);
    REQUIRE(sane(make_fatbin({EntrySpec{2, {image.begin(), image.begin() + len}}})));
  }
}

TEST_CASE("robustness: prefixes of the raw PTX, as an image", "[fatbin][robustness][ptx]") {
  const auto b = load_fixture("ptx_only_none");
  const EntryInfo e = list_entries(b).at(0);
  const std::vector<uint8_t> image(b.begin() + e.payload(), b.begin() + e.payload() + e.size);
  for (size_t len = 0; len <= image.size(); len += (len < 1536 ? 1 : 17)) {  // every length through the first kernels
    INFO("length " << len);
    REQUIRE(sane(make_fatbin({EntrySpec{1, {image.begin(), image.begin() + len}}})));
  }
}

TEST_CASE("robustness: compressed payloads cut short", "[fatbin][robustness]") {
  for (const char* name : {"size", "speed", "ptx_only"}) {
    const auto b = load_fixture(name);
    for (const EntryInfo& e : list_entries(b)) {
      if ((e.flags & 0xA000) == 0) continue;
      const uint64_t compressed = get_le(b, e.header + 16, 4);
      for (uint64_t len = 1; len < compressed; len += (len < 64 ? 1 : 7)) {
        auto c = b;
        put_le(&c, e.header + 16, 4, len);
        INFO(name << " compressed length " << len);
        REQUIRE(sane(c));
      }
    }
  }
}

TEST_CASE("robustness: container fields set to odd values", "[fatbin][robustness]") {
  for (const char* name : {"none", "size", "speed"}) {
    const auto b = load_fixture(name);
    for (const Field& f : container_fields(b)) {
      for (uint64_t v : interesting(get_le(b, f.at, f.width), b.size(), f.width)) {
        auto c = b;
        put_le(&c, f.at, f.width, v);
        INFO(name << " field at " << f.at << " width " << f.width << " = " << v);
        REQUIRE(sane(c));
      }
    }
  }
}

TEST_CASE("robustness: ELF header, section and symbol fields set to odd values", "[fatbin][robustness]") {
  const auto b = load_fixture("cubin_only");
  for (const Field& f : elf_fields(b)) {
    for (uint64_t v : interesting(get_le(b, f.at, f.width), b.size(), f.width)) {
      auto c = b;
      put_le(&c, f.at, f.width, v);
      INFO("field at " << f.at << " width " << f.width << " = " << v);
      REQUIRE(sane(c));
    }
  }
}

TEST_CASE("robustness: sections pointed at one another", "[fatbin][robustness]") {
  const auto b = load_fixture("cubin_only");
  const CubinMap c = map_cubin(b);
  for (const SectionInfo& s : c.sections) {
    for (const SectionInfo& other : c.sections) {
      auto m = b;
      put_le(&m, s.header + 24, 8, other.offset);  // overlap another section
      put_le(&m, s.header + 32, 8, other.size + 1);
      REQUIRE(sane(m));
      put_le(&m, s.header + 4, 4, other.type);
      REQUIRE(sane(m));
    }
  }
}

TEST_CASE("robustness: every byte of every .nv.info section", "[fatbin][robustness]") {
  const auto b = load_fixture("cubin_only");
  const CubinMap c = map_cubin(b);
  for (const SectionInfo& s : c.sections) {
    if (s.type != 0x70000000) continue;  // SHT_CUDA_INFO
    for (uint64_t i = 0; i < s.size; ++i) {
      for (unsigned v : {0x00u, 0x01u, 0x03u, 0x04u, 0x17u, 0x19u, 0x45u, 0x80u, 0xffu}) {
        auto m = b;
        m[c.base + s.offset + i] = static_cast<uint8_t>(v);
        REQUIRE(sane(m));
      }
    }
  }
}

TEST_CASE("robustness: random bit flips", "[fatbin][robustness]") {
  std::mt19937_64 rng(0x5eed);
  std::map<Error, int> outcomes;  // to see that the flips reach past the first check
  for (const char* name : {"default", "size", "speed", "cubin_only", "ptx_only_none"}) {
    const auto b = load_fixture(name);
    const size_t headers = std::min<size_t>(b.size(), 512);  // fat binary, entry and ELF headers
    for (int iter = 0; iter < 800; ++iter) {
      auto m = b;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < flips; ++i) {
        const size_t at = iter % 2 ? rng() % headers : rng() % m.size();
        m[at] = static_cast<uint8_t>(m[at] ^ (1u << (rng() % 8)));
      }
      INFO(name << " iteration " << iter);
      Error e = Error::kNone;
      REQUIRE(sane(m, &e));
      ++outcomes[e];
    }
  }
  CHECK(outcomes[Error::kNone] > 0);
  for (Error e : {Error::kTruncated, Error::kBadEntry, Error::kDecompress, Error::kBadElf, Error::kBadPtx}) {
    INFO(error_name(e));
    CHECK(outcomes[e] > 0);
  }
}

TEST_CASE("robustness: PTX text mangled", "[fatbin][robustness][ptx]") {
  const auto none = load_fixture("ptx_only_none");
  const EntryInfo e = list_entries(none).at(0);
  const std::string text(none.begin() + e.payload(), none.begin() + e.payload() + e.size);
  std::mt19937_64 rng(0x97c);
  const std::string specials = "(){}[];,.=-+\"/*0 \nxf";
  for (int iter = 0; iter < 1500; ++iter) {
    std::string t = text;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < edits && !t.empty(); ++i) {
      const size_t at = rng() % t.size();
      switch (rng() % 3) {
        case 0: t[at] = specials[rng() % specials.size()]; break;
        case 1: t.erase(at, 1 + rng() % 40); break;
        default: t.insert(at, 1, specials[rng() % specials.size()]); break;
      }
    }
    INFO("iteration " << iter);
    REQUIRE(sane(ptx_fatbin(t)));
  }
}

TEST_CASE("robustness: many entries", "[fatbin][robustness]") {
  std::vector<EntrySpec> unknown(20000, EntrySpec{7, {}});
  Module m;
  CHECK(parse(make_fatbin(unknown), &m) == Error::kNoKernelMetadata);

  const std::string ptx = ".entry k(.param .u32 x) {}\n.global .u32 v = 1;";
  std::vector<EntrySpec> same(2000, EntrySpec{1, {ptx.begin(), ptx.end()}});
  REQUIRE(parse(make_fatbin(same), &m) == Error::kNone);
  CHECK(m.kernels.size() == 1);
  CHECK(m.variables.size() == 1);

  const auto cubin = load_fixture("cubin_only");
  const EntryInfo e = list_entries(cubin).at(0);
  std::vector<EntrySpec> cubins(200, EntrySpec{2, {cubin.begin() + e.payload(), cubin.begin() + e.payload() + e.size}});
  REQUIRE(parse(make_fatbin(cubins), &m) == Error::kNone);
  CHECK(m.kernels.size() == 7);
}

}  // namespace vgpu::fatbin::test

namespace vgpu::fatbin::test {

TEST_CASE("robustness: a fat binary announcing more image bytes than the caller allows is refused "
          "before anything is decompressed", "[fatbin][robustness]") {
  // Four zstd entries announcing 64 MiB each; their payload is no zstd frame,
  // so an attempt to decompress would fail differently (kDecompress).
  std::vector<EntrySpec> entries(4, EntrySpec{2, std::vector<uint8_t>(64, 0x5a)});
  std::vector<uint8_t> b = make_fatbin(entries);
  for (const EntryInfo& e : list_entries(b)) {
    put_le(&b, e.header + 16, 4, 64);         // compressed size
    put_le(&b, e.header + 40, 8, 0x8011);     // zstd
    put_le(&b, e.header + 56, 8, 64u << 20);  // decompressed size
  }
  Module m;
  CHECK(parse(b, &m) == Error::kDecompress);  // within the default limit: it tries
  CHECK(parse(b, &m, Limits{256u << 20}) == Error::kDecompress);  // exactly fits
  CHECK(parse(b, &m, Limits{200u << 20}) == Error::kTooLarge);     // the last one does not
  CHECK(parse(b, &m, Limits{0}) == Error::kTooLarge);
}

}  // namespace vgpu::fatbin::test
