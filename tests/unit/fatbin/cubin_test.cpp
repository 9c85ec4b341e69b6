// The cubin reader on real cubins edited in ways nvcc does not produce but
// the ELF and .nv.info formats allow or forbid.
#include <catch2/catch.hpp>

#include "fixtures.h"

namespace vgpu::fatbin::test {
namespace {

struct Fixture {
  std::vector<uint8_t> bytes = load_fixture("cubin_only");
  CubinMap elf = map_cubin(bytes);
  Module reference = parse_or_fail(bytes);

  static Module parse_or_fail(const std::vector<uint8_t>& b) {
    Module m;
    REQUIRE(parse(b, &m) == Error::kNone);
    return m;
  }
  size_t at(const SectionInfo& s) const { return elf.base + s.offset; }
  const SectionInfo& section(std::string_view name) const {
    const SectionInfo* s = elf.find(name);
    REQUIRE(s != nullptr);
    return *s;
  }
  // Offset of the symbol table entry named `name` in bytes.
  size_t symbol(std::string_view name) const {
    const SectionInfo& symtab = section(".symtab");
    const size_t strtab = at(elf.sections.at(symtab.link));
    for (size_t off = at(symtab); off < at(symtab) + symtab.size; off += 24) {
      std::string n;
      for (size_t c = strtab + get_le(bytes, off, 4); bytes.at(c) != 0; ++c) n += static_cast<char>(bytes[c]);
      if (n == name) return off;
    }
    FAIL("no symbol " << name);
    return 0;
  }
  // Offsets of the records with attribute `attr` in a .nv.info section.
  std::vector<size_t> records(std::string_view section_name, uint8_t attr) const {
    const SectionInfo& s = section(section_name);
    std::vector<size_t> out;
    for (size_t off = at(s); off < at(s) + s.size;) {
      const uint8_t format = bytes.at(off);
      if (bytes.at(off + 1) == attr) out.push_back(off);
      off += 4 + (format == 4 ? get_le(bytes, off + 2, 2) : 0);
    }
    return out;
  }
};


}  // namespace

TEST_CASE("ELF extended section numbering", "[fatbin][cubin]") {
  Fixture f;
  auto b = f.bytes;
  const SectionInfo& zero = f.elf.sections.at(0);
  put_le(&b, zero.header + 32, 8, f.elf.sections.size());           // sh_size: the count
  put_le(&b, zero.header + 40, 4, get_le(b, f.elf.base + 0x3e, 2));  // sh_link: the name table
  put_le(&b, f.elf.base + 0x3c, 2, 0);
  put_le(&b, f.elf.base + 0x3e, 2, 0xffff);
  Module m;
  REQUIRE(parse(b, &m) == Error::kNone);
  CHECK(same_module(f.reference, m));
}

TEST_CASE("symbol section indices through SHT_SYMTAB_SHNDX", "[fatbin][cubin]") {
  Fixture f;
  auto b = f.bytes;
  const SectionInfo& symtab = f.section(".symtab");
  const SectionInfo& spare = f.section(".debug_frame");  // room for one u32 per symbol
  const size_t symbols = symtab.size / 24;
  REQUIRE(spare.size >= 4 * symbols);
  const auto symtab_index = static_cast<uint64_t>(&symtab - f.elf.sections.data());
  put_le(&b, spare.header + 4, 4, 18);  // SHT_SYMTAB_SHNDX
  put_le(&b, spare.header + 40, 4, symtab_index);
  for (size_t i = 0; i < symbols; ++i) {
    const size_t sym = f.at(symtab) + 24 * i;
    put_le(&b, f.at(spare) + 4 * i, 4, get_le(b, sym + 6, 2));
    put_le(&b, sym + 6, 2, 0xffff);  // SHN_XINDEX
  }
  Module m;
  REQUIRE(parse(b, &m) == Error::kNone);
  CHECK(same_module(f.reference, m));
}

TEST_CASE("inconsistent .nv.info records are refused", "[fatbin][cubin]") {
  Fixture f;
  const std::string info = ".nv.info._Z8k_structi6Paddedc";
  const auto kparams = f.records(info, 0x17);
  const auto totals = f.records(info, 0x19);
  REQUIRE(kparams.size() == 3);
  REQUIRE(totals.size() == 1);
  Module m;
  auto edit = [&](size_t off, size_t width, uint64_t v) {
    auto b = f.bytes;
    put_le(&b, off, width, v);
    return parse(b, &m);
  };
  CHECK(edit(totals[0] + 2, 2, 34) == Error::kBadElf);  // total past the last parameter (33)
  CHECK(edit(totals[0] + 2, 2, 32) == Error::kBadElf);
  CHECK(edit(kparams[0] + 4 + 4, 2, get_le(f.bytes, kparams[1] + 8, 2)) == Error::kBadElf);  // ordinal twice
  CHECK(edit(kparams[0] + 4 + 4, 2, 3) == Error::kBadElf);       // ordinal out of range
  CHECK(edit(kparams[1] + 4 + 6, 2, 2) == Error::kBadElf);       // Padded moved onto the int
  CHECK(edit(kparams[0], 1, 9) == Error::kBadElf);               // unknown record format
  CHECK(edit(kparams[0] + 2, 2, 0xfff0) == Error::kBadElf);      // record longer than its section
}

TEST_CASE("a kernel without its .nv.info section is left out", "[fatbin][cubin]") {
  Fixture f;
  auto b = f.bytes;
  const SectionInfo& info = f.section(".nv.info._Z7k_emptyv");
  const size_t names = f.at(f.elf.sections.at(get_le(b, f.elf.base + 0x3e, 2)));
  b.at(names + get_le(b, info.header, 4) + 1) = 'X';  // ".Xv.info._Z7k_emptyv"
  Module m;
  REQUIRE(parse(b, &m) == Error::kNone);
  CHECK(m.find_kernel("_Z7k_emptyv") == nullptr);
  CHECK(m.kernels.size() == f.reference.kernels.size() - 1);
}

TEST_CASE("variables: bounds and spaces", "[fatbin][cubin]") {
  Fixture f;
  Module m;
  const size_t table = f.symbol("d_table");  // 128 bytes at 0 in .nv.global (NOBITS)
  const size_t big = f.symbol("d_big");      // in .nv.global.init
  auto edit = [&](size_t off, size_t width, uint64_t v) {
    auto b = f.bytes;
    put_le(&b, off, width, v);
    return parse(b, &m);
  };
  CHECK(edit(table + 16, 8, 129) == Error::kBadElf);       // past its section
  CHECK(edit(table + 8, 8, ~0ull) == Error::kBadElf);
  CHECK(edit(big + 16, 8, ~0ull - 1) == Error::kBadElf);
  // Moved into a section that holds no variables (a kernel's parameter bank): ignored.
  const uint64_t bank = static_cast<uint64_t>(f.elf.find(".nv.constant0._Z7k_emptyv") - f.elf.sections.data());
  REQUIRE(edit(big + 6, 2, bank) == Error::kNone);
  CHECK(m.find_variable("d_big") == nullptr);
  CHECK(m.find_variable("d_table") != nullptr);
}

}  // namespace vgpu::fatbin::test
