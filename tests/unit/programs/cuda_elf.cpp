#include "cuda_elf.h"

#include <elf.h>
#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>

namespace cuda_elf {
namespace {

[[noreturn]] void bad(const std::string& what) { throw std::runtime_error(what); }

template <typename T>
T load(const std::vector<uint8_t>& b, uint64_t off) {
  if (off > b.size() || b.size() - off < sizeof(T)) bad("read past the end of the data");
  T v;
  std::memcpy(&v, b.data() + off, sizeof v);
  return v;
}

std::vector<uint8_t> slice(const std::vector<uint8_t>& b, uint64_t off, uint64_t size) {
  if (off > b.size() || b.size() - off < size) bad("slice past the end of the data");
  return {b.begin() + static_cast<std::ptrdiff_t>(off),
          b.begin() + static_cast<std::ptrdiff_t>(off + size)};
}

struct Section {
  std::string name;
  Elf64_Shdr hdr;
};

struct Elf {
  const std::vector<uint8_t>& bytes;
  Elf64_Ehdr ehdr;
  std::vector<Section> sections;

  explicit Elf(const std::vector<uint8_t>& b) : bytes(b), ehdr(load<Elf64_Ehdr>(b, 0)) {
    if (std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0 || ehdr.e_ident[EI_CLASS] != ELFCLASS64 ||
        ehdr.e_ident[EI_DATA] != ELFDATA2LSB)
      bad("not a 64-bit little-endian ELF");
    if (ehdr.e_shentsize != sizeof(Elf64_Shdr)) bad("odd section header size");
    std::vector<Elf64_Shdr> hdrs;
    for (unsigned i = 0; i < ehdr.e_shnum; ++i)
      hdrs.push_back(load<Elf64_Shdr>(b, ehdr.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr)));
    if (ehdr.e_shstrndx >= hdrs.size()) bad("no section name table");
    const Elf64_Shdr& names = hdrs[ehdr.e_shstrndx];
    for (const auto& h : hdrs) sections.push_back({string_at(names, h.sh_name), h});
  }

  std::string string_at(const Elf64_Shdr& strtab, uint64_t off) const {
    if (off >= strtab.sh_size) bad("string offset past its table");
    uint64_t start = strtab.sh_offset + off, end = strtab.sh_offset + strtab.sh_size;
    if (end > bytes.size()) bad("string table past the end");
    const auto* p = bytes.data() + start;
    size_t len = strnlen(reinterpret_cast<const char*>(p), end - start);
    return std::string(reinterpret_cast<const char*>(p), len);
  }

  const Section* find(const std::string& name) const {
    for (const auto& s : sections)
      if (s.name == name) return &s;
    return nullptr;
  }

  std::vector<uint8_t> contents(const Section& s) const {
    if (s.hdr.sh_type == SHT_NOBITS) return {};
    return slice(bytes, s.hdr.sh_offset, s.hdr.sh_size);
  }

  struct Symbol {
    std::string name;
    Elf64_Sym sym;
  };
  std::vector<Symbol> symbols(uint32_t type) const {
    std::vector<Symbol> out;
    for (const auto& s : sections) {
      if (s.hdr.sh_type != type) continue;
      if (s.hdr.sh_link >= sections.size()) bad("symbol table without strings");
      const Elf64_Shdr& strtab = sections[s.hdr.sh_link].hdr;
      for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= s.hdr.sh_size; off += sizeof(Elf64_Sym)) {
        auto sym = load<Elf64_Sym>(bytes, s.hdr.sh_offset + off);
        out.push_back({string_at(strtab, sym.st_name), sym});
      }
    }
    return out;
  }
};

// .nv.info attribute records: {u8 format, u8 attribute, u16 value-or-size}
// followed, for EIFMT_SVAL, by `size` bytes.
constexpr uint8_t kFmtSval = 0x04;
constexpr uint8_t kAttrKparamInfo = 0x17;
constexpr uint8_t kAttrCbankParamSize = 0x19;

void read_nv_info(const std::vector<uint8_t>& info, Kernel* k) {
  uint64_t off = 0;
  while (off + 4 <= info.size()) {
    uint8_t fmt = info[off], attr = info[off + 1];
    uint16_t value = load<uint16_t>(info, off + 2);
    off += 4;
    if (fmt == kFmtSval) {
      if (attr == kAttrKparamInfo) {
        if (value < 12) bad("short EIATTR_KPARAM_INFO");
        Param p;
        p.ordinal = load<uint16_t>(info, off + 4);
        p.offset = load<uint16_t>(info, off + 6);
        p.size = load<uint32_t>(info, off + 8) >> 18;
        k->params.push_back(p);
      }
      off += value;
    } else if (attr == kAttrCbankParamSize) {
      k->param_bytes = value;
    }
  }
  std::sort(k->params.begin(), k->params.end(),
            [](const Param& a, const Param& b) { return a.ordinal < b.ordinal; });
}

// Fat binary: header {u32 magic, u16 version, u16 header size, u64 size},
// then entries {u16 kind, u16, u32 header size, u64 payload size, u32
// compressed size, u32, u16 minor, u16 major, u32 arch, u32, u32, u64 flags,
// u64, u64 decompressed size}, each followed by its payload.
constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint16_t kKindElf = 2;
constexpr uint64_t kFlagLz4 = 0x2000, kFlagZstd = 0x8000;

std::vector<uint8_t> entry_payload(const std::vector<uint8_t>& sec, uint64_t entry,
                                   uint32_t header_size, uint64_t size) {
  uint64_t flags = load<uint64_t>(sec, entry + 40);
  uint64_t decompressed = header_size >= 64 ? load<uint64_t>(sec, entry + 56) : 0;
  std::vector<uint8_t> raw = slice(sec, entry + header_size, size);
  if (!(flags & (kFlagLz4 | kFlagZstd))) return raw;
  uint32_t compressed = load<uint32_t>(sec, entry + 16);
  if (compressed > raw.size() || decompressed == 0 || decompressed > (1u << 30))
    bad("odd compressed fat binary entry");
  std::vector<uint8_t> out(decompressed);
  if (flags & kFlagZstd) {
    size_t n = ZSTD_decompress(out.data(), out.size(), raw.data(), compressed);
    if (ZSTD_isError(n) || n != out.size()) bad("zstd entry does not decompress");
  } else {
    int n = LZ4_decompress_safe(reinterpret_cast<const char*>(raw.data()),
                                reinterpret_cast<char*>(out.data()), static_cast<int>(compressed),
                                static_cast<int>(out.size()));
    if (n < 0 || static_cast<uint64_t>(n) != out.size()) bad("LZ4 entry does not decompress");
  }
  return out;
}

std::vector<Cubin> read_fatbins(const std::vector<uint8_t>& sec) {
  std::vector<Cubin> out;
  uint64_t off = 0;
  while (off + 16 <= sec.size()) {
    if (load<uint32_t>(sec, off) != kFatbinMagic) {  // padding between fat binaries
      off += 8;
      continue;
    }
    uint16_t header = load<uint16_t>(sec, off + 6);
    uint64_t size = load<uint64_t>(sec, off + 8);
    uint64_t entry = off + header, end = off + header + size;
    if (end > sec.size()) bad("fat binary past its section");
    while (entry < end) {
      uint16_t kind = load<uint16_t>(sec, entry);
      uint32_t entry_header = load<uint32_t>(sec, entry + 4);
      uint64_t payload = load<uint64_t>(sec, entry + 8);
      if (entry_header < 16 || entry + entry_header + payload > end) bad("odd fat binary entry");
      if (kind == kKindElf) out.push_back(read_cubin(entry_payload(sec, entry, entry_header, payload)));
      entry += entry_header + payload;
    }
    off = end;
  }
  return out;
}

}  // namespace

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad("cannot open " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Cubin read_cubin(const std::vector<uint8_t>& bytes) {
  Elf elf(bytes);
  if (elf.ehdr.e_machine != EM_CUDA) bad("not a CUDA ELF");
  Cubin c;
  for (const auto& s : elf.symbols(SHT_SYMTAB)) {
    int type = ELF64_ST_TYPE(s.sym.st_info);
    if (type == STT_FUNC) {
      // A kernel has its own .nv.info.<name> section (device functions do not).
      const Section* info = elf.find(".nv.info." + s.name);
      if (info == nullptr) continue;
      Kernel k;
      k.name = s.name;
      read_nv_info(elf.contents(*info), &k);
      c.kernels.push_back(std::move(k));
    } else if (type == STT_OBJECT && !s.name.empty() && s.name[0] != '.' &&
               s.sym.st_shndx < elf.sections.size()) {
      const Section& sec = elf.sections[s.sym.st_shndx];
      Variable v{s.name, s.sym.st_size, sec.name, {}};
      if (sec.hdr.sh_type != SHT_NOBITS) {
        if (s.sym.st_value > sec.hdr.sh_size || sec.hdr.sh_size - s.sym.st_value < s.sym.st_size)
          bad("variable " + s.name + " past its section");
        v.init = slice(bytes, sec.hdr.sh_offset + s.sym.st_value, s.sym.st_size);
      }
      c.variables.push_back(std::move(v));
    }
  }
  return c;
}

Program read_program(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  Elf elf(bytes);
  Program p;
  if (const Section* dyn = elf.find(".dynamic")) {
    if (dyn->hdr.sh_link >= elf.sections.size()) bad("dynamic section without strings");
    const Elf64_Shdr& strtab = elf.sections[dyn->hdr.sh_link].hdr;
    for (uint64_t off = 0; off + sizeof(Elf64_Dyn) <= dyn->hdr.sh_size; off += sizeof(Elf64_Dyn)) {
      auto d = load<Elf64_Dyn>(bytes, dyn->hdr.sh_offset + off);
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag == DT_NEEDED) p.needed.push_back(elf.string_at(strtab, d.d_un.d_val));
    }
  }
  if (const Section* fb = elf.find(".nv_fatbin")) {
    p.has_fatbin = true;
    p.cubins = read_fatbins(elf.contents(*fb));
  }
  return p;
}

std::vector<std::string> dynamic_symbols(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  Elf elf(bytes);
  std::vector<std::string> out;
  for (const auto& s : elf.symbols(SHT_DYNSYM))
    if (s.sym.st_shndx != SHN_UNDEF && !s.name.empty()) out.push_back(s.name);
  return out;
}

}  // namespace cuda_elf
