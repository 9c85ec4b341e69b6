#include "decompress.h"

#include <climits>
#include <new>

#include <lz4.h>
#include <zstd.h>

namespace vgpu::fatbin::detail {
namespace {

Error zstd_into(Bytes src, uint8_t* dst, size_t size) {
  // The frame announces its own size; it must agree with the entry header.
  const unsigned long long framed = ZSTD_getFrameContentSize(src.data(), src.size());
  if (framed == ZSTD_CONTENTSIZE_ERROR) return Error::kDecompress;
  if (framed != ZSTD_CONTENTSIZE_UNKNOWN && framed != size) return Error::kDecompress;
  const size_t n = ZSTD_decompress(dst, size, src.data(), src.size());
  if (ZSTD_isError(n) || n != size) return Error::kDecompress;
  return Error::kNone;
}

Error lz4_into(Bytes src, uint8_t* dst, size_t size) {
  if (src.size() > INT_MAX || size > INT_MAX) return Error::kTooLarge;
  const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(src.data()),
                                    reinterpret_cast<char*>(dst), static_cast<int>(src.size()),
                                    static_cast<int>(size));
  if (n < 0 || static_cast<size_t>(n) != size) return Error::kDecompress;
  return Error::kNone;
}

}  // namespace

Error entry_image(const Entry& e, Image* out) {
  const bool zstd = (e.flags & kFlagZstd) != 0, lz4 = (e.flags & kFlagLz4) != 0;
  if (!zstd && !lz4) {
    if (e.payload.size() > kMaxImageBytes) return Error::kTooLarge;
    out->owned.reset();
    out->bytes = e.payload;
    return Error::kNone;
  }
  if (e.decompressed_size == 0) return Error::kBadEntry;
  if (e.decompressed_size > kMaxImageBytes) return Error::kTooLarge;
  const auto size = static_cast<size_t>(e.decompressed_size);
  // Not zero-filled: the decompressor must write every byte, or we fail below.
  std::unique_ptr<uint8_t[]> buf(new (std::nothrow) uint8_t[size]);
  if (!buf) return Error::kTooLarge;
  const Error err = zstd ? zstd_into(e.payload, buf.get(), size) : lz4_into(e.payload, buf.get(), size);
  if (err != Error::kNone) return err;
  out->bytes = Bytes(buf.get(), size);
  out->owned = std::move(buf);
  return Error::kNone;
}

}  // namespace vgpu::fatbin::detail
