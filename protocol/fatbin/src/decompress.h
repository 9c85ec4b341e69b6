// An entry's image: its payload as stored, or decompressed (zstd or LZ4) into
// a buffer of exactly the announced size, bounded by kMaxImageBytes.
#pragma once

#include <memory>

#include "container.h"

namespace vgpu::fatbin::detail {

struct Image {
  std::unique_ptr<uint8_t[]> owned;  // set when decompressed
  Bytes bytes;                       // the image (a view into owned or the input)
};

Error entry_image(const Entry& e, Image* out);

}  // namespace vgpu::fatbin::detail
