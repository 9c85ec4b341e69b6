// Bounds-checked little-endian reads over untrusted bytes. Every read says
// whether it fit; nothing here can read outside the span it is given.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace vgpu::fatbin::detail {

using Bytes = std::span<const uint8_t>;

// True when [off, off + len) lies within [0, size), without overflow.
inline bool fits(uint64_t size, uint64_t off, uint64_t len) {
  return off <= size && len <= size - off;
}

template <typename T>
bool load_le(Bytes b, uint64_t off, T* v) {
  if (!fits(b.size(), off, sizeof(T))) return false;
  const uint8_t* p = b.data() + off;
  T r = 0;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&r, p, sizeof r);
  } else {
    for (size_t i = 0; i < sizeof(T); ++i) r = static_cast<T>(r | (static_cast<T>(p[i]) << (8 * i)));
  }
  *v = r;
  return true;
}

// The bytes [off, off + len) of b, or false when they do not fit.
inline bool slice(Bytes b, uint64_t off, uint64_t len, Bytes* out) {
  if (!fits(b.size(), off, len)) return false;
  *out = b.subspan(static_cast<size_t>(off), static_cast<size_t>(len));
  return true;
}

// Longest name (symbol, section, PTX identifier) accepted; mangled template
// kernels run to a few KB.
inline constexpr size_t kMaxNameBytes = 64 * 1024;

// The NUL-terminated string at off, at most max_len bytes long before its NUL.
// False when off is out of range, or no NUL comes within bounds.
inline bool c_string(Bytes b, uint64_t off, size_t max_len, std::string_view* out) {
  if (off >= b.size()) return false;
  const size_t avail = b.size() - static_cast<size_t>(off);
  const size_t scan = avail < max_len + 1 ? avail : max_len + 1;
  const auto* p = reinterpret_cast<const char*>(b.data() + off);
  const size_t len = std::string_view(p, scan).find('\0');
  if (len == std::string_view::npos) return false;
  *out = std::string_view(p, len);
  return true;
}

}  // namespace vgpu::fatbin::detail
