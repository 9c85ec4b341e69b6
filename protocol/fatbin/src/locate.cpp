// Finding the fat binary behind a registration wrapper, in the guest's own
// memory (see fatbinary_section.h in the CUDA Toolkit for the wrapper).
#include <cstdint>
#include <cstring>

#include "container.h"

namespace vgpu::fatbin {
namespace {

constexpr int32_t kWrapperMagic = 0x466243b1;
constexpr int32_t kWrapperVersion = 1;
constexpr int32_t kWrapperLinkVersion = 2;  // -rdc=true: adds the prelinked list

struct Wrapper {
  int32_t magic;
  int32_t version;
  const void* data;
  const void* filename_or_fatbins;
};

Error read_wrapper(const void* wrapper, Wrapper* w) {
  if (wrapper == nullptr) return Error::kBadMagic;
  std::memcpy(w, wrapper, sizeof *w);
  if (w->magic != kWrapperMagic) return Error::kBadMagic;
  if (w->version != kWrapperVersion && w->version != kWrapperLinkVersion) return Error::kBadVersion;
  return Error::kNone;
}

// The span of the fat binary at `data`, from its own header.
Error fatbin_span(const void* data, std::span<const uint8_t>* out) {
  if (data == nullptr) return Error::kBadMagic;
  const auto* p = static_cast<const uint8_t*>(data);
  const detail::Bytes header(p, detail::kFatbinHeaderSize);
  uint32_t magic = 0;
  uint16_t version = 0, header_size = 0;
  uint64_t fat_size = 0;
  detail::load_le(header, 0, &magic);
  detail::load_le(header, 4, &version);
  detail::load_le(header, 6, &header_size);
  detail::load_le(header, 8, &fat_size);
  if (magic != detail::kFatbinMagic) return Error::kBadMagic;
  if (version != detail::kFatbinVersion) return Error::kBadVersion;
  if (header_size < detail::kFatbinHeaderSize) return Error::kBadEntry;
  constexpr uint64_t kMaxSpan = PTRDIFF_MAX;
  if (fat_size > kMaxSpan - header_size) return Error::kTooLarge;
  *out = std::span<const uint8_t>(p, static_cast<size_t>(header_size + fat_size));
  return Error::kNone;
}

}  // namespace

Error locate(const void* wrapper, std::span<const uint8_t>* out) {
  Wrapper w;
  if (Error e = read_wrapper(wrapper, &w); e != Error::kNone) return e;
  return fatbin_span(w.data, out);
}

Error locate_prelinked(const void* wrapper, std::vector<std::span<const uint8_t>>* out) {
  Wrapper w;
  if (Error e = read_wrapper(wrapper, &w); e != Error::kNone) return e;
  out->clear();
  if (w.version != kWrapperLinkVersion || w.filename_or_fatbins == nullptr) return Error::kNone;
  const auto* list = static_cast<const void* const*>(w.filename_or_fatbins);
  for (size_t i = 0; list[i] != nullptr; ++i) {
    if (i == kMaxPrelinked) return Error::kTooLarge;
    std::span<const uint8_t> s;
    if (Error e = fatbin_span(list[i], &s); e != Error::kNone) return e;
    out->push_back(s);
  }
  return Error::kNone;
}

}  // namespace vgpu::fatbin
