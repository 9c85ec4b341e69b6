// The fat binary container: a 16-byte header, then entries, each an entry
// header followed by its (possibly compressed) payload. See ../FORMAT.md.
#pragma once

#include <cstdint>
#include <vector>

#include "bytes.h"
#include "vgpu/fatbin/fatbin.h"

namespace vgpu::fatbin::detail {

inline constexpr uint32_t kFatbinMagic = 0xBA55ED50;
inline constexpr uint16_t kFatbinVersion = 1;
inline constexpr uint32_t kFatbinHeaderSize = 16;
inline constexpr uint32_t kEntryHeaderSize = 64;  // the fixed part; PTX entries add options

inline constexpr uint16_t kKindPtx = 1;
inline constexpr uint16_t kKindElf = 2;

inline constexpr uint64_t kFlagLz4 = 0x2000;   // payload is one LZ4 raw block
inline constexpr uint64_t kFlagZstd = 0x8000;  // payload is a zstd frame

struct Entry {
  uint16_t kind = 0;
  uint32_t arch = 0;               // SM version, e.g. 90
  uint64_t flags = 0;
  Bytes payload;                   // compressed bytes when compressed, else the whole payload
  uint64_t decompressed_size = 0;  // only meaningful when compressed
};

// Splits a fat binary into its entries (payloads are views into `bytes`).
// Bytes after the end the header announces are ignored.
Error read_entries(Bytes bytes, std::vector<Entry>* out);

}  // namespace vgpu::fatbin::detail
