// The PTX text of a fat binary, for a host that runs kernels from their PTX
// (the sim backend's interpreter) rather than from a cubin.
#include <algorithm>
#include <cstring>
#include <new>

#include "container.h"
#include "decompress.h"
#include "vgpu/fatbin/fatbin.h"

namespace vgpu::fatbin {

Error ptx_text(std::span<const uint8_t> bytes, uint64_t max_bytes, std::string* out) {
  if (out == nullptr) return Error::kBadEntry;
  std::vector<detail::Entry> entries;
  if (Error e = detail::read_entries(bytes, &entries); e != Error::kNone) return e;
  // The lowest architecture: its code uses the fewest newer instructions.
  const detail::Entry* chosen = nullptr;
  for (const detail::Entry& e : entries) {
    if (e.kind == detail::kKindPtx && (!chosen || e.arch < chosen->arch)) chosen = &e;
  }
  if (!chosen) return Error::kNoKernelMetadata;
  // Every PTX entry of that architecture: one per object of a program built with -rdc=true.
  std::string text;
  uint64_t total = 0;
  try {
    for (const detail::Entry& e : entries) {
      if (e.kind != detail::kKindPtx || e.arch != chosen->arch) continue;
      const uint64_t announced = e.decompressed_size != 0 ? e.decompressed_size : e.payload.size();
      if (announced > max_bytes || total + announced > max_bytes) return Error::kTooLarge;
      total += announced;
      detail::Image image;
      if (Error err = detail::entry_image(e, &image); err != Error::kNone) return err;
      // The text ends at its NUL (the entry is padded).
      const auto* t = reinterpret_cast<const char*>(image.bytes.data());
      const void* nul = image.bytes.empty() ? nullptr : std::memchr(t, 0, image.bytes.size());
      const size_t length = nul ? static_cast<size_t>(static_cast<const char*>(nul) - t) : image.bytes.size();
      if (!text.empty()) text.push_back('\0');
      text.append(t, length);
    }
  } catch (const std::bad_alloc&) {
    return Error::kTooLarge;
  } catch (const std::length_error&) {
    return Error::kTooLarge;
  }
  *out = std::move(text);
  return Error::kNone;
}

}  // namespace vgpu::fatbin
