// The sim worker's CPU texture and surface units: what CUDA's tex*/surf*
// device functions return for a texture or surface object (the CUDA
// Programming Guide's "Texture Fetching" appendix), read from and written to
// this process's copy of the context's memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "vgpu/executor/texture.h"

namespace vgpu::executor::sim {

// cudaSurfaceBoundaryMode's values.
inline constexpr int kBoundaryZero = 0, kBoundaryClamp = 1, kBoundaryTrap = 2;

// Reads texture `d` as a kernel's tex1D/tex2D/tex3D/tex1DLayered/tex2DLayered/texCubemap/
// texCubemapLayered/tex*Lod/tex1Dfetch would. `memory` points at d.base in this process.
// coord: x (y, z) in the texture's coordinates (normalized when d.read_flags has
// kNormalizedCoordinates); for cubemaps the direction vector (x, y, z). layer: the layer of a
// layered/cubemap-layered texture. lod: the mip level of detail (kMipmapped), 0 otherwise.
// out: d.channels values: floats when returns_float(d), else elements of the format's type
// (e.g. 4 bytes for uchar4). Returns 0; -1 if d cannot be read (texture_check refuses it, or
// a bad layer).
int texture_read(const TextureDesc& d, const uint8_t* memory, const float coord[3], int layer,
                 float lod, void* out);

// tex1Dfetch by an integer index (exact past 2^24, where a float is not):
// a linear resource's element `index`, zeros outside it. -1 for any other
// resource.
int texture_fetch(const TextureDesc& d, const uint8_t* memory, long long index, void* out);

// A surface's surf1Dread/surf2Dread/surf3Dread/surf*Layeredread and write: x is in bytes (as
// CUDA's surf functions take it), y, z in elements (z is the layer for layered surfaces,
// layer*6+face for cubemaps). size: bytes to move, 1, 2, 4, 8 or 16, with x % size == 0.
// boundary (cudaSurfaceBoundaryMode) decides an access outside the surface: kBoundaryTrap
// returns -1 and moves nothing, kBoundaryClamp moves the nearest aligned access inside it,
// kBoundaryZero reads zeros and drops writes (returns 0). Returns 0, or -1 (trapped, or bad
// arguments).
int surface_read(const TextureDesc& d, const uint8_t* memory, long long x_bytes, long long y,
                 long long z, void* out, size_t size, int boundary);
int surface_write(const TextureDesc& d, uint8_t* memory, const void* in, size_t size,
                  long long x_bytes, long long y, long long z, int boundary);

}  // namespace vgpu::executor::sim
