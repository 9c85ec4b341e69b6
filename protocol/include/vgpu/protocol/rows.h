// A copy of rows (MemcpyRows, calls.def): `height` rows of `width` bytes,
// each side's rows `pitch` bytes apart. What the guest and the host both need
// to agree on: which sides are host memory, and how many bytes a side spans.
#pragma once

#include <cstdint>

namespace vgpu::proto {

// MemcpyRowsRequest::kind. A host side's address is an offset in the
// caller's data area.
enum RowsKind : uint32_t {
  kRowsHostToDevice = 0,
  kRowsDeviceToHost = 1,
  kRowsDeviceToDevice = 2,
};

// The bytes one side of a rows copy spans, (height - 1) * pitch + width, in
// *bytes. Pitch 0 is one row repeated (a source row copied to every row: a 2D
// memset). False when the shape is not one: no rows, rows that overlap
// (0 < pitch < width), or a span past 2^64.
inline bool rows_span(uint64_t width, uint64_t height, uint64_t pitch, uint64_t* bytes) {
  if (width == 0 || height == 0) return false;
  if (height > 1 && pitch != 0 && pitch < width) return false;
  const uint64_t gaps = height - 1;
  if (gaps != 0 && pitch > (UINT64_MAX - width) / gaps) return false;
  *bytes = gaps * pitch + width;
  return true;
}

}  // namespace vgpu::proto
