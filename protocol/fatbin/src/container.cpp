#include "container.h"

namespace vgpu::fatbin::detail {
namespace {

// Entry header, all little-endian (offsets in bytes):
//   0 u16 kind         2 u16 version (0x101)   4 u32 header_size
//   8 u64 payload size (padded)                16 u32 compressed size
//  20 u32 options offset (PTX: 0x40)           24 u16 minor  26 u16 major
//  28 u32 arch         32 u32 name offset      36 u32 name length
//  40 u64 flags        48 u64 zero             56 u64 decompressed size
Error read_entry(Bytes region, uint64_t off, Entry* e, uint64_t* next) {
  uint32_t header_size = 0;
  uint64_t size = 0, flags = 0, decompressed = 0;
  uint32_t compressed = 0;
  if (!fits(region.size(), off, kEntryHeaderSize)) return Error::kTruncated;
  load_le(region, off + 0, &e->kind);
  load_le(region, off + 4, &header_size);
  load_le(region, off + 8, &size);
  load_le(region, off + 16, &compressed);
  load_le(region, off + 28, &e->arch);
  load_le(region, off + 40, &flags);
  load_le(region, off + 56, &decompressed);

  if (header_size < kEntryHeaderSize) return Error::kBadEntry;
  Bytes payload;
  if (!fits(region.size(), off, header_size) ||
      !slice(region, off + header_size, size, &payload)) {
    return Error::kTruncated;
  }
  e->flags = flags;
  e->payload = payload;
  e->decompressed_size = 0;
  const bool zstd = (flags & kFlagZstd) != 0, lz4 = (flags & kFlagLz4) != 0;
  if (zstd && lz4) return Error::kBadEntry;
  if (zstd || lz4) {
    if (compressed == 0 || compressed > size) return Error::kBadEntry;
    e->payload = payload.first(compressed);
    e->decompressed_size = decompressed;
  }
  *next = off + header_size + size;
  return Error::kNone;
}

}  // namespace

}  // namespace vgpu::fatbin::detail

namespace vgpu::fatbin {

uint64_t announced_size(std::span<const uint8_t> bytes) {
  uint16_t header_size = 0;
  uint64_t fat_size = 0;
  if (!detail::load_le(bytes, 6, &header_size) || !detail::load_le(bytes, 8, &fat_size)) return bytes.size();
  if (fat_size > bytes.size() || header_size > bytes.size() - fat_size) return bytes.size();
  return header_size + fat_size;
}

}  // namespace vgpu::fatbin

namespace vgpu::fatbin::detail {

Error read_entries(Bytes bytes, std::vector<Entry>* out) {
  uint32_t magic = 0;
  uint16_t version = 0, header_size = 0;
  uint64_t fat_size = 0;
  if (!load_le(bytes, 0, &magic) || !load_le(bytes, 4, &version) ||
      !load_le(bytes, 6, &header_size) || !load_le(bytes, 8, &fat_size)) {
    return Error::kTruncated;
  }
  if (magic != kFatbinMagic) return Error::kBadMagic;
  if (version != kFatbinVersion) return Error::kBadVersion;
  if (header_size < kFatbinHeaderSize) return Error::kBadEntry;
  Bytes region;
  if (!slice(bytes, header_size, fat_size, &region)) return Error::kTruncated;

  out->clear();
  uint64_t off = 0;
  while (off < region.size()) {  // each entry takes at least 64 bytes: bounded
    Entry e;
    uint64_t next = 0;
    if (Error err = read_entry(region, off, &e, &next); err != Error::kNone) return err;
    out->push_back(e);
    off = next;
  }
  return Error::kNone;
}

}  // namespace vgpu::fatbin::detail
