// What PTX's `tex` instruction leaves in its four 32-bit destination
// registers, from the texture unit's answer (texture_sampler.h): the PTX
// interpreter's reads of texture objects.
#pragma once

#include <cstdint>

#include "vgpu/executor/texture.h"

namespace vgpu::executor::sim {

// tex1D/2D/3D/Layered/Cubemap/Lod at `coord`: floats when the texture
// returns floats, else each channel's integer widened to 32 bits (signed
// formats sign-extended); channels the format lacks read 0. False when the
// texture cannot be read (texture_read's -1).
bool texture_lanes(const TextureDesc& d, const float coord[3], int layer, float lod, uint32_t out[4]);
// tex1Dfetch: element `index` of a linear texture, the same way.
bool texture_fetch_lanes(const TextureDesc& d, long long index, uint32_t out[4]);

}  // namespace vgpu::executor::sim
