#include "elf.h"

namespace vgpu::fatbin::detail {

Error ElfView::open(Bytes image, ElfView* out) {
  static constexpr uint8_t kIdent[6] = {0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little-endian */};
  if (image.size() < 64) return Error::kBadElf;
  for (size_t i = 0; i < sizeof kIdent; ++i) {
    if (image[i] != kIdent[i]) return Error::kBadElf;
  }
  ElfView v;
  v.image_ = image;
  // A real cubin needs about its own size (names, initial values): allow four times.
  v.work_left_ = 4 * uint64_t{image.size()} + (1u << 20);
  uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  load_le(image, 0x28, &v.shoff_);
  load_le(image, 0x3a, &shentsize);
  load_le(image, 0x3c, &shnum);
  load_le(image, 0x3e, &shstrndx);
  if (v.shoff_ == 0) {  // no sections at all
    *out = v;
    return Error::kNone;
  }
  if (shentsize != kSectionHeaderSize) return Error::kBadElf;

  // Extended numbering: the real count and string table index live in
  // section 0, so read it before the count is known.
  v.shnum_ = 1;
  Section zero;
  if (Error e = v.section(0, &zero); e != Error::kNone) return e;
  uint64_t count = shnum != 0 ? shnum : zero.size;
  uint32_t strndx = shstrndx != kShnXindex ? shstrndx : zero.link;
  if (count > (image.size() - v.shoff_) / kSectionHeaderSize) return Error::kBadElf;
  v.shnum_ = static_cast<uint32_t>(count);

  Section strs;
  if (Error e = v.section(strndx, &strs); e != Error::kNone) return e;
  if (Error e = v.contents(strs, &v.shstrtab_); e != Error::kNone) return e;
  *out = v;
  return Error::kNone;
}

Error ElfView::section(uint32_t index, Section* out) const {
  if (index >= shnum_) return Error::kBadElf;
  if (!fits(image_.size(), shoff_, (uint64_t{index} + 1) * kSectionHeaderSize)) return Error::kBadElf;
  const uint64_t at = shoff_ + index * kSectionHeaderSize;
  load_le(image_, at + 0, &out->name);
  load_le(image_, at + 4, &out->type);
  load_le(image_, at + 24, &out->offset);
  load_le(image_, at + 32, &out->size);
  load_le(image_, at + 40, &out->link);
  load_le(image_, at + 44, &out->info);
  return Error::kNone;
}

Error ElfView::contents(const Section& s, Bytes* out) const {
  if (s.type == kShtNobits) {
    *out = Bytes();
    return Error::kNone;
  }
  return slice(image_, s.offset, s.size, out) ? Error::kNone : Error::kBadElf;
}

Error ElfView::spend(uint64_t bytes) const {
  if (bytes > work_left_) return Error::kTooLarge;
  work_left_ -= bytes;
  return Error::kNone;
}

namespace {

Error name_at(const ElfView& elf, Bytes table, uint32_t offset, std::string_view* out) {
  if (!c_string(table, offset, kMaxNameBytes, out)) return Error::kBadElf;
  return elf.spend(out->size() + 1);
}

}  // namespace

Error ElfView::section_name(const Section& s, std::string_view* out) const {
  return name_at(*this, shstrtab_, s.name, out);
}

Error ElfView::open_symbols() {
  Section s;
  for (uint32_t i = 1; i < shnum_; ++i) {
    if (Error e = section(i, &s); e != Error::kNone) return e;
    if (s.type != kShtSymtab) continue;
    Section strs;
    if (Error e = contents(s, &symbols_); e != Error::kNone) return e;
    if (Error e = section(s.link, &strs); e != Error::kNone) return e;
    if (Error e = contents(strs, &strtab_); e != Error::kNone) return e;
    symtab_index_ = i;
    break;
  }
  if (symtab_index_ == 0) return Error::kNone;
  for (uint32_t i = 1; i < shnum_; ++i) {
    if (Error e = section(i, &s); e != Error::kNone) return e;
    if (s.type == kShtSymtabShndx && s.link == symtab_index_) return contents(s, &shndx_);
  }
  return Error::kNone;
}

Error ElfView::symbol(uint64_t index, Symbol* out) const {
  const uint64_t at = index * kSymbolSize;
  if (!fits(symbols_.size(), at, kSymbolSize)) return Error::kBadElf;
  uint8_t info = 0;
  uint16_t shndx = 0;
  load_le(symbols_, at + 0, &out->name);
  load_le(symbols_, at + 4, &info);
  load_le(symbols_, at + 5, &out->other);
  load_le(symbols_, at + 6, &shndx);
  load_le(symbols_, at + 8, &out->value);
  load_le(symbols_, at + 16, &out->size);
  out->type = static_cast<uint8_t>(info & 0xf);
  out->bind = static_cast<uint8_t>(info >> 4);
  out->shndx = shndx;
  if (shndx == kShnXindex) {
    uint32_t wide = 0;
    if (!load_le(shndx_, index * 4, &wide)) return Error::kBadElf;
    out->shndx = wide;
  } else if (shndx >= kShnLoReserve) {
    out->shndx = kShnUndef;  // absolute, common...: not in any section
  }
  return Error::kNone;
}

Error ElfView::symbol_name(const Symbol& s, std::string_view* out) const {
  return name_at(*this, strtab_, s.name, out);
}

}  // namespace vgpu::fatbin::detail
