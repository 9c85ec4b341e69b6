// A read-only, bounds-checked view of an ELF64 little-endian image: section
// headers, section contents and names, symbols. Knows nothing about CUDA.
#pragma once

#include <cstdint>
#include <string_view>

#include "bytes.h"
#include "vgpu/fatbin/fatbin.h"

namespace vgpu::fatbin::detail {

inline constexpr uint32_t kShtSymtab = 2;
inline constexpr uint32_t kShtNobits = 8;
inline constexpr uint32_t kShtSymtabShndx = 18;
inline constexpr uint16_t kShnUndef = 0;
inline constexpr uint16_t kShnLoReserve = 0xff00;
inline constexpr uint16_t kShnXindex = 0xffff;
inline constexpr uint8_t kStbLocal = 0;
inline constexpr uint8_t kStoCudaManaged = 0x04;  // st_other of a __managed__ variable
inline constexpr uint8_t kSttObject = 1;
inline constexpr uint8_t kSttFunc = 2;

struct Section {
  uint32_t name = 0;  // offset in the section name table
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;
  uint32_t info = 0;
};

struct Symbol {
  uint32_t name = 0;  // offset in the symbol string table
  uint8_t type = 0;   // low nibble of st_info
  uint8_t bind = 0;   // high nibble: kStbLocal, global, weak
  uint8_t other = 0;
  uint32_t shndx = 0; // resolved through SHT_SYMTAB_SHNDX when needed
  uint64_t value = 0;
  uint64_t size = 0;
};

class ElfView {
 public:
  // Checks the identification and that the section header table fits.
  static Error open(Bytes image, ElfView* out);

  uint32_t section_count() const { return shnum_; }
  Error section(uint32_t index, Section* out) const;
  // Contents of a section that occupies file space (empty for SHT_NOBITS).
  Error contents(const Section& s, Bytes* out) const;
  Error section_name(const Section& s, std::string_view* out) const;

  // The first SHT_SYMTAB, with its string table; has_symbols() false if none.
  Error open_symbols();
  bool has_symbols() const { return symtab_index_ != 0; }
  uint64_t symbol_count() const { return symbols_.size() / kSymbolSize; }
  Error symbol(uint64_t index, Symbol* out) const;
  Error symbol_name(const Symbol& s, std::string_view* out) const;

  // Bytes the reader may still examine: names (each lookup scans to a NUL)
  // and whatever the caller reports. Symbols and sections may all point at
  // the same long string or range, so without this the work could grow with
  // the square of the image size. kTooLarge once spent.
  Error spend(uint64_t bytes) const;

 private:
  static constexpr uint64_t kSectionHeaderSize = 64;
  static constexpr uint64_t kSymbolSize = 24;

  Bytes image_;
  uint64_t shoff_ = 0;
  uint32_t shnum_ = 0;
  Bytes shstrtab_;
  uint32_t symtab_index_ = 0;
  Bytes symbols_;
  Bytes strtab_;
  Bytes shndx_;  // SHT_SYMTAB_SHNDX contents, if any
  mutable uint64_t work_left_ = 0;
};

}  // namespace vgpu::fatbin::detail
