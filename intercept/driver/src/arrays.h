// CUDA arrays and mipmapped arrays in the guest. An array is a block of the
// process's device memory on the host, laid out as vgpu/executor/texture.h
// says (rows padded to 32 bytes, slices after rows; a mipmapped array's
// levels back to back); the CUarray handle is the guest's description of it. Copies reach an
// array as rows of that memory (copy_2d.cpp), and texture and surface objects
// name it by address and layout (textures.cpp).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "vgpu/executor/texture.h"

namespace vgpu::driver::arrays {

struct Array {
  CUDA_ARRAY3D_DESCRIPTOR desc{};  // as created (0 for unused dimensions)
  uint64_t dptr = 0;               // its memory on the host
  uint64_t bytes = 0;
  bool level = false;              // a level of a mipmapped array (not destroyable)
  size_t row_bytes() const;        // of the elements of a row
  size_t pitch() const;            // from one row to the next (row_bytes, padded)
  size_t rows() const;             // per slice
  size_t slices() const;
};

// The array behind a handle, or null if it is not a live one.
Array* find(CUarray handle);

// A resource as texture.h describes it: an array, or level 0 of a mipmapped
// array with all its levels (mipmapped non-null), with the object kind and
// resource filled in; the caller adds how it is read.
CUresult describe(CUarray array, executor::TextureDesc* out);
CUresult describe(CUmipmappedArray mipmapped, executor::TextureDesc* out);

}  // namespace vgpu::driver::arrays
