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
  const uint64_t announced = chosen->decompressed_size != 0 ? chosen->decompressed_size
                                                            : chosen->payload.size();
  if (announced > max_bytes) return Error::kTooLarge;
  try {
    detail::Image image;
    if (Error e = detail::entry_image(*chosen, &image); e != Error::kNone) return e;
    // The text ends at its NUL (the entry is padded).
    const auto* text = reinterpret_cast<const char*>(image.bytes.data());
    const void* nul = image.bytes.empty() ? nullptr : std::memchr(text, 0, image.bytes.size());
    const size_t length = nul ? static_cast<size_t>(static_cast<const char*>(nul) - text)
                              : image.bytes.size();
    out->assign(text, length);
  } catch (const std::bad_alloc&) {
    return Error::kTooLarge;
  } catch (const std::length_error&) {
    return Error::kTooLarge;
  }
  return Error::kNone;
}

}  // namespace vgpu::fatbin
