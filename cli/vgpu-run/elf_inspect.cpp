#include "elf_inspect.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace vgpu::cli {

bool ProgramInfo::needs_shared_cudart() const {
  for (const auto& n : needed) {
    if (n.rfind("libcudart.so", 0) == 0) return true;
  }
  return false;
}

namespace {

template <class T>
bool read_at(const std::vector<char>& f, uint64_t off, T* out) {
  if (off > f.size() || sizeof(T) > f.size() - off) return false;
  std::memcpy(out, f.data() + off, sizeof(T));
  return true;
}

std::string string_at(const std::vector<char>& f, uint64_t off) {
  if (off >= f.size()) return {};
  const char* s = f.data() + off;
  return std::string(s, strnlen(s, f.size() - off));
}

}  // namespace

bool inspect_program(const std::string& path, ProgramInfo* out, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = "cannot read " + path;
    return false;
  }
  const std::vector<char> f((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Elf64_Ehdr eh;
  if (!read_at(f, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64) {
    *why = path + " is not a 64-bit ELF executable";
    return false;
  }
  out->elf64 = true;
  // Section headers: the fat binary, and the dynamic section with its strings.
  Elf64_Shdr names;
  const bool have_names =
      eh.e_shstrndx != SHN_UNDEF &&
      read_at(f, eh.e_shoff + uint64_t{eh.e_shstrndx} * eh.e_shentsize, &names);
  for (uint16_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!read_at(f, eh.e_shoff + uint64_t{i} * eh.e_shentsize, &sh)) break;
    if (have_names && string_at(f, names.sh_offset + sh.sh_name) == ".nv_fatbin") out->has_fatbin = true;
    if (sh.sh_type != SHT_DYNAMIC) continue;
    Elf64_Shdr strtab;
    if (!read_at(f, eh.e_shoff + uint64_t{sh.sh_link} * eh.e_shentsize, &strtab)) continue;
    for (uint64_t off = sh.sh_offset; off + sizeof(Elf64_Dyn) <= sh.sh_offset + sh.sh_size;
         off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      if (!read_at(f, off, &d) || d.d_tag == DT_NULL) break;
      if (d.d_tag == DT_NEEDED) out->needed.push_back(string_at(f, strtab.sh_offset + d.d_un.d_val));
    }
  }
  return true;
}

}  // namespace vgpu::cli
