// What cuModuleLoadData and cuLibraryLoadData accept, as a fat binary the
// host parses: a registration wrapper (NVIDIA's runtime passes these), a fat
// binary, a cubin (ELF), or PTX text. A cubin or PTX image becomes a fat
// binary of one entry (protocol/fatbin/FORMAT.md), so the host has one format
// to check, and the cuda backend's driver picks from it as from nvcc's; a
// cubin NVRTC compiled gets a second entry, the PTX it came from.
#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string_view>

#include "driver_state.h"
#include "log.h"

namespace vgpu::driver {

namespace {

constexpr uint32_t kWrapperMagic = 0x466243b1;
constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint64_t kMaxImage = fatbin::kMaxImageBytes;

template <class T>
T read(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
void put(std::vector<uint8_t>& out, size_t at, T v) {
  std::memcpy(out.data() + at, &v, sizeof v);
}

// The bytes an ELF image spans: the furthest of its headers and sections.
uint64_t elf_size(const uint8_t* p) {
  if (p[4] != 2) return 0;  // ELFCLASS64 only (cubins are)
  const uint64_t phoff = read<uint64_t>(p + 0x20), shoff = read<uint64_t>(p + 0x28);
  const uint16_t phentsize = read<uint16_t>(p + 0x36), phnum = read<uint16_t>(p + 0x38);
  const uint16_t shentsize = read<uint16_t>(p + 0x3a), shnum = read<uint16_t>(p + 0x3c);
  if (shentsize < 64 || shoff > kMaxImage) return 0;
  uint64_t end = std::max<uint64_t>(shoff + uint64_t{shnum} * shentsize,
                                    phoff + uint64_t{phnum} * phentsize);
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint8_t* sh = p + shoff + uint64_t{i} * shentsize;
    const uint32_t type = read<uint32_t>(sh + 4);
    if (type == 8) continue;  // SHT_NOBITS takes no bytes in the file
    end = std::max(end, read<uint64_t>(sh + 0x18) + read<uint64_t>(sh + 0x20));
  }
  return end <= kMaxImage ? end : 0;
}

// "9.0" after `directive` in PTX text, as (major, minor); or a target "sm_90".
bool ptx_number(std::string_view ptx, std::string_view directive, unsigned* a, unsigned* b) {
  const size_t at = ptx.find(directive);
  if (at == std::string_view::npos) return false;
  const char* s = ptx.data() + at + directive.size();
  while (*s == ' ' || *s == '\t') ++s;
  if (std::strncmp(s, "sm_", 3) == 0) {
    *a = static_cast<unsigned>(std::strtoul(s + 3, nullptr, 10));
    *b = 0;
    return *a > 0;
  }
  char* end = nullptr;
  *a = static_cast<unsigned>(std::strtoul(s, &end, 10));
  if (*end != '.') return false;
  *b = static_cast<unsigned>(std::strtoul(end + 1, nullptr, 10));
  return true;
}

// One entry of a fat binary this file writes: kind 1 (PTX) or 2 (cubin).
struct Entry {
  uint16_t kind;
  const uint8_t* payload;
  uint64_t size;
  unsigned major, minor, sm;
};

std::vector<uint8_t> fat_binary(std::initializer_list<Entry> entries) {
  std::vector<uint8_t> out(16, 0);
  put<uint32_t>(out, 0, kFatbinMagic);
  put<uint16_t>(out, 4, 1);
  put<uint16_t>(out, 6, 16);
  for (const Entry& x : entries) {
    const uint32_t header = x.kind == 1 ? 0x50 : 0x40;
    const uint64_t padded = (x.size + 7) & ~uint64_t{7};
    const size_t e = out.size();
    out.resize(e + header + padded, 0);
    put<uint16_t>(out, e + 0, x.kind);
    put<uint16_t>(out, e + 2, 0x0101);
    put<uint32_t>(out, e + 4, header);
    put<uint64_t>(out, e + 8, padded);
    put<uint32_t>(out, e + 20, x.kind == 1 ? 0x40 : 0);  // PTX: an empty options pair
    put<uint16_t>(out, e + 24, static_cast<uint16_t>(x.minor));
    put<uint16_t>(out, e + 26, static_cast<uint16_t>(x.major));
    put<uint32_t>(out, e + 28, x.sm);
    put<uint64_t>(out, e + 40, 0x11);  // 64-bit, Linux
    std::memcpy(out.data() + e + header, x.payload, x.size);
  }
  put<uint64_t>(out, 8, out.size() - 16);
  return out;
}

// PTX text as a fat binary entry, if it declares its version and target.
bool ptx_entry(std::string_view ptx, Entry* out) {
  unsigned major = 0, minor = 0, sm = 0, unused = 0;
  if (!ptx_number(ptx, ".version", &major, &minor) || !ptx_number(ptx, ".target", &sm, &unused)) return false;
  *out = {1, reinterpret_cast<const uint8_t*>(ptx.data()), ptx.size() + 1, major, minor, sm};
  return true;
}

// The entries of fat binary `fat` (checked against its bounds): each entry's header and
// payload, as they lie.
std::vector<std::span<const uint8_t>> entries_of(std::span<const uint8_t> fat) {
  std::vector<std::span<const uint8_t>> out;
  if (fat.size() < 16 || read<uint32_t>(fat.data()) != kFatbinMagic) return out;
  const uint64_t end = std::min<uint64_t>(fat.size(), 16 + read<uint64_t>(fat.data() + 8));
  for (uint64_t at = 16; at + 16 <= end;) {
    const uint64_t header = read<uint32_t>(fat.data() + at + 4);
    const uint64_t payload = read<uint64_t>(fat.data() + at + 8);
    if (header < 16 || header > end - at || payload > end - at - header) break;
    out.push_back(fat.subspan(at, header + payload));
    at += header + payload;
  }
  return out;
}

// A program built with -rdc=true registers nvlink's fat binary (linked cubins, no PTX) and,
// beside it, each object's own: their PTX entries join the module, so that a host without the
// GPU (sim) interprets the kernels, and kernels launched from the device find their code.
CUresult add_prelinked_ptx(const void* wrapper, std::vector<uint8_t>* out) {
  std::vector<std::span<const uint8_t>> objects;
  if (fatbin::locate_prelinked(wrapper, &objects) != fatbin::Error::kNone || objects.empty())
    return CUDA_SUCCESS;
  if (out->size() < 16) out->assign(16, 0);  // an empty linked image: its header only
  out->resize(std::min<uint64_t>(out->size(), 16 + read<uint64_t>(out->data() + 8)));  // entries end here
  put<uint32_t>(*out, 0, kFatbinMagic);
  put<uint16_t>(*out, 4, 1);
  put<uint16_t>(*out, 6, 16);
  for (std::span<const uint8_t> object : objects) {
    for (std::span<const uint8_t> entry : entries_of(object)) {
      if (read<uint16_t>(entry.data()) != 1) continue;  // PTX only: the cubins are nvlink's
      if (out->size() + entry.size() > fatbin::kMaxTotalImageBytes) return CUDA_ERROR_INVALID_IMAGE;
      out->insert(out->end(), entry.begin(), entry.end());
    }
  }
  put<uint64_t>(*out, 8, out->size() - 16);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult image_to_fatbin(const void* image, std::vector<uint8_t>* out) {
  if (!image) return CUDA_ERROR_INVALID_VALUE;
  const auto* p = static_cast<const uint8_t*>(image);
  const uint32_t magic = read<uint32_t>(p);
  if (magic == kWrapperMagic) {
    std::span<const uint8_t> fat;
    if (fatbin::Error e = fatbin::locate(image, &fat); e != fatbin::Error::kNone) {
      intercept::log_line("cannot read a fat binary wrapper (%s)",
                          std::string(fatbin::error_name(e)).c_str());
      return CUDA_ERROR_INVALID_IMAGE;
    }
    out->assign(fat.begin(), fat.end());
    return add_prelinked_ptx(image, out);
  }
  if (magic == kFatbinMagic) {
    const uint64_t size = 16 + read<uint64_t>(p + 8);
    if (size > fatbin::kMaxTotalImageBytes) return CUDA_ERROR_INVALID_IMAGE;
    out->assign(p, p + size);
    return CUDA_SUCCESS;
  }
  if (std::memcmp(p, "\x7f" "ELF", 4) == 0) {
    const uint64_t size = elf_size(p);
    if (size == 0) return CUDA_ERROR_INVALID_IMAGE;
    const uint32_t flags = read<uint32_t>(p + 0x30);
    const unsigned sm = p[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;  // ELF ABI version
    const Entry cubin{2, p, size, 1, 8, sm};
    // NVRTC's cubin travels with the PTX it was compiled from, so a host
    // without the GPU (sim) runs the PTX as it does nvcc's fat binaries.
    Entry ptx;
    const std::string companion = jit_ptx_for(p, size);
    if (!companion.empty() && ptx_entry(companion, &ptx)) {
      *out = fat_binary({cubin, ptx});
    } else {
      *out = fat_binary({cubin});
    }
    return CUDA_SUCCESS;
  }
  // PTX: text that declares its version and target.
  const std::string_view ptx(reinterpret_cast<const char*>(p), strnlen(reinterpret_cast<const char*>(p), kMaxImage));
  if (Entry e; ptx_entry(ptx, &e)) {
    *out = fat_binary({e});
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_IMAGE;
}

}  // namespace vgpu::driver
