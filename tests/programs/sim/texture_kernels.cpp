// CPU implementations of textures.cu's kernels, for the sim backend (see
// test_kernels.cpp for the conventions). Texture and surface reads go
// through vgpu_sim_launch's helpers (ABI 4), which apply the object's
// addressing, filtering and format as the GPU does.
#include "kernel_support.h"

using namespace vgpu_test_kernels;

namespace {

struct Float4 {
  float x, y, z, w;
};
struct Uchar4 {
  unsigned char x, y, z, w;
};
enum Kind { k1D = 1, k2D = 2, k3D = 3, k2DLayered = 5, kCubemap = 6, k2DLod = 7 };

}  // namespace

// __global__ void sample_float(cudaTextureObject_t tex, int kind, const float4* c, float* out, int n):
// out[i] = tex1D/tex2D/tex3D/tex2DLayered/texCubemap/tex2DLod at c[i].
VGPU_SIM_KERNEL(_Z12sample_floatyiPK6float4Pfi) {
  unsigned long long tex;
  int kind;
  const Float4* c;
  float* out;
  int n;
  if (!read_params(launch, tex, kind, c, out, n)) return kBadParams;
  int rc = 0;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i >= n || rc != 0) return;
    const Float4 p = c[i];
    float v = -12345.0f;
    switch (kind) {
      case k1D: rc = launch->texture_read(launch, tex, p.x, 0, 0, 0, 0, &v); break;
      case k2D: rc = launch->texture_read(launch, tex, p.x, p.y, 0, 0, 0, &v); break;
      case k3D: rc = launch->texture_read(launch, tex, p.x, p.y, p.z, 0, 0, &v); break;
      case k2DLayered: rc = launch->texture_read(launch, tex, p.x, p.y, 0, static_cast<int>(p.w), 0, &v); break;
      case kCubemap: rc = launch->texture_read(launch, tex, p.x, p.y, p.z, 0, 0, &v); break;
      case k2DLod: rc = launch->texture_read(launch, tex, p.x, p.y, 0, 0, p.w, &v); break;
    }
    out[i] = v;
  });
  return rc;
}

// __global__ void sample_uchar4(cudaTextureObject_t tex, const float4* c, uchar4* out, int n):
// out[i] = tex2D<uchar4>(tex, c[i].x, c[i].y).
VGPU_SIM_KERNEL(_Z13sample_uchar4yPK6float4P6uchar4i) {
  unsigned long long tex;
  const Float4* c;
  Uchar4* out;
  int n;
  if (!read_params(launch, tex, c, out, n)) return kBadParams;
  int rc = 0;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n && rc == 0) rc = launch->texture_read(launch, tex, c[i].x, c[i].y, 0, 0, 0, &out[i]);
  });
  return rc;
}

// __global__ void fetch_int(cudaTextureObject_t tex, const int* index, int* out, int n):
// out[i] = tex1Dfetch<int>(tex, index[i]).
VGPU_SIM_KERNEL(_Z9fetch_intyPKiPii) {
  unsigned long long tex;
  const int* index;
  int* out;
  int n;
  if (!read_params(launch, tex, index, out, n)) return kBadParams;
  int rc = 0;
  for_each_thread(launch, [&](const Thread& t) {
    int i = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    if (i < n && rc == 0) rc = launch->texture_fetch(launch, tex, index[i], &out[i]);
  });
  return rc;
}

// __global__ void surface_fill(cudaSurfaceObject_t s, int width, int height):
// surf2Dwrite(y * 1000 + x, s, x * 4, y) inside width x height.
VGPU_SIM_KERNEL(_Z12surface_fillyii) {
  unsigned long long s;
  int width, height;
  if (!read_params(launch, s, width, height)) return kBadParams;
  int rc = 0;
  for_each_thread(launch, [&](const Thread& t) {
    int x = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    int y = t.blockIdx.y * t.blockDim.y + t.threadIdx.y;
    if (x < width && y < height && rc == 0) {
      const int v = y * 1000 + x;
      rc = launch->surface_write(launch, s, &v, sizeof v, x * 4, y, 0, /*trap*/ 2);
    }
  });
  return rc;
}

// __global__ void surface_copy(cudaSurfaceObject_t s, int* out, int width, int height):
// surf2Dread(&v, s, x * 4, y, cudaBoundaryModeZero) into out, row by row.
VGPU_SIM_KERNEL(_Z12surface_copyyPiii) {
  unsigned long long s;
  int* out;
  int width, height;
  if (!read_params(launch, s, out, width, height)) return kBadParams;
  int rc = 0;
  for_each_thread(launch, [&](const Thread& t) {
    int x = t.blockIdx.x * t.blockDim.x + t.threadIdx.x;
    int y = t.blockIdx.y * t.blockDim.y + t.threadIdx.y;
    if (x < width && y < height && rc == 0) {
      int v = -1;
      rc = launch->surface_read(launch, s, x * 4, y, 0, &v, sizeof v, /*zero*/ 0);
      out[y * width + x] = v;
    }
  });
  return rc;
}
