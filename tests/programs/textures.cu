// textures: CUDA arrays, texture and surface objects as course material and
// the samples use them, every value checked against what a GPU returns:
//   1. 2D and 3D arrays: copies in and out (whole and a sub-box, a peer copy
//      too), array to array, their descriptions, an out-of-range copy refused;
//   2. texture objects over a 2D array: point and linear filtering,
//      unnormalized and normalized coordinates, clamp, wrap, mirror and
//      border addressing;
//   3. element-type (uchar4) and normalized-float reads of 8-bit data;
//   4. 1D, 3D (trilinear), layered and cubemap arrays; a mipmapped array's
//      levels read by level of detail (point and linear between levels);
//   5. linear memory read with tex1Dfetch (out of range reads 0) and pitched
//      memory with linear filtering;
//   6. a surface written and read by kernels, with the zero boundary mode;
//   7. the Get* queries, then everything destroyed.
// The sample points are texel centres and exact fractions, so a GPU's 8-bit
// filter weights give the same floats as the arithmetic here.
#include <cmath>
#include <cstring>
#include <vector>

#include "common.h"

enum Kind { k1D = 1, k2D = 2, k3D = 3, k2DLayered = 5, kCubemap = 6, k2DLod = 7 };

// One texture read per thread at c[i] (x, y, z, w: layer or level of detail).
__global__ void sample_float(cudaTextureObject_t tex, int kind, const float4* c, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float4 p = c[i];
  float v = -12345.0f;
  switch (kind) {
    case k1D: v = tex1D<float>(tex, p.x); break;
    case k2D: v = tex2D<float>(tex, p.x, p.y); break;
    case k3D: v = tex3D<float>(tex, p.x, p.y, p.z); break;
    case k2DLayered: v = tex2DLayered<float>(tex, p.x, p.y, static_cast<int>(p.w)); break;
    case kCubemap: v = texCubemap<float>(tex, p.x, p.y, p.z); break;
    case k2DLod: v = tex2DLod<float>(tex, p.x, p.y, p.w); break;
  }
  out[i] = v;
}

__global__ void sample_uchar4(cudaTextureObject_t tex, const float4* c, uchar4* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<uchar4>(tex, c[i].x, c[i].y);
}

__global__ void fetch_int(cudaTextureObject_t tex, const int* index, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<int>(tex, index[i]);
}

__global__ void surface_fill(cudaSurfaceObject_t s, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) surf2Dwrite(y * 1000 + x, s, x * 4, y);
}

// Reads a (width x height) region, which may pass the surface's edge.
__global__ void surface_copy(cudaSurfaceObject_t s, int* out, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) {
    int v = -1;
    surf2Dread(&v, s, x * 4, y, cudaBoundaryModeZero);
    out[y * width + x] = v;
  }
}

namespace {

struct Probe {
  float4 at;
  float want;
  const char* what;
};

// Reads every probe through `tex` and checks each value.
void probe(cudaTextureObject_t tex, int kind, const std::vector<Probe>& probes, float tolerance = 0) {
  const int n = static_cast<int>(probes.size());
  std::vector<float4> at(n);
  for (int i = 0; i < n; ++i) at[i] = probes[i].at;
  float4* d_at = nullptr;
  float* d_out = nullptr;
  CUDA_OK(cudaMalloc(&d_at, n * sizeof(float4)));
  CUDA_OK(cudaMalloc(&d_out, n * sizeof(float)));
  CUDA_OK(cudaMemcpy(d_at, at.data(), n * sizeof(float4), cudaMemcpyHostToDevice));
  sample_float<<<1, 64>>>(tex, kind, d_at, d_out, n);
  CUDA_OK(cudaGetLastError());
  std::vector<float> got(n);
  CUDA_OK(cudaMemcpy(got.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    vt::check(std::fabs(got[i] - probes[i].want) <= tolerance, "%s: %g (want %g)", probes[i].what,
              got[i], probes[i].want);
  }
  CUDA_OK(cudaFree(d_at));
  CUDA_OK(cudaFree(d_out));
}

cudaTextureObject_t texture_of(cudaArray_t array, cudaTextureFilterMode filter, cudaTextureAddressMode address,
                               bool normalized, float border = 0) {
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = array;
  cudaTextureDesc td{};
  td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = address;
  td.filterMode = filter;
  td.readMode = cudaReadModeElementType;
  td.normalizedCoords = normalized;
  td.borderColor[0] = border;
  cudaTextureObject_t tex = 0;
  CUDA_OK(cudaCreateTextureObject(&tex, &res, &td, nullptr));
  return tex;
}

constexpr int kW = 8, kH = 4;

void arrays_and_copies(cudaArray_t* out) {
  // 2D float array: value y * 10 + x, copied in from a pitched host buffer.
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
  cudaArray_t a = nullptr, b = nullptr;
  CUDA_OK(cudaMallocArray(&a, &f, kW, kH));
  CUDA_OK(cudaMallocArray(&b, &f, kW, kH));
  constexpr int kPitchFloats = 11;
  std::vector<float> host(kPitchFloats * kH, -1.0f);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) host[y * kPitchFloats + x] = y * 10.0f + x;
  CUDA_OK(cudaMemcpy2DToArray(a, 0, 0, host.data(), kPitchFloats * sizeof(float), kW * sizeof(float), kH,
                                 cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy2DArrayToArray(b, 0, 0, a, 0, 0, kW * sizeof(float), kH, cudaMemcpyDeviceToDevice));
  std::vector<float> back(kW * kH, 0.0f);
  CUDA_OK(cudaMemcpy2DFromArray(back.data(), kW * sizeof(float), b, 0, 0, kW * sizeof(float), kH,
                                   cudaMemcpyDeviceToHost));
  bool same = true;
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) same &= back[y * kW + x] == y * 10.0f + x;
  vt::check(same, "2D array: pitched host -> array -> array -> host keeps every value");

  // A sub-rectangle out: columns 2..4 of rows 1..2.
  float part[2][3] = {};
  CUDA_OK(cudaMemcpy2DFromArray(part, 3 * sizeof(float), a, 2 * sizeof(float), 1, 3 * sizeof(float), 2,
                                   cudaMemcpyDeviceToHost));
  vt::check(part[0][0] == 12 && part[0][2] == 14 && part[1][0] == 22 && part[1][2] == 24,
            "2D array: a sub-rectangle copies out (%g %g %g %g)", part[0][0], part[0][2], part[1][0],
            part[1][2]);
  const cudaError_t e = cudaMemcpy2DFromArray(part, 3 * sizeof(float), a, 6 * sizeof(float), 0,
                                              3 * sizeof(float), 1, cudaMemcpyDeviceToHost);
  vt::check(e == cudaErrorInvalidValue, "2D array: a copy past its edge is refused (%s)", vt::err_text(e));
  (void)cudaGetLastError();

  cudaChannelFormatDesc got{};
  cudaExtent extent{};
  unsigned flags = 99;
  CUDA_OK(cudaArrayGetInfo(&got, &extent, &flags, a));
  vt::check(got.x == 32 && got.f == cudaChannelFormatKindFloat && extent.width == kW && extent.height == kH &&
                extent.depth == 0 && flags == 0,
            "cudaArrayGetInfo: float, %zu x %zu x %zu, flags %u", extent.width, extent.height, extent.depth,
            flags);
  CUDA_OK(cudaGetChannelDesc(&got, b));
  vt::check(got.x == 32 && got.y == 0 && got.f == cudaChannelFormatKindFloat, "cudaGetChannelDesc");
  CUDA_OK(cudaFreeArray(b));

  // 3D int array 5 x 4 x 3, value z * 100 + y * 10 + x; a 2 x 2 x 2 box out.
  cudaChannelFormatDesc i32 = cudaCreateChannelDesc<int>();
  cudaArray_t c = nullptr;
  CUDA_OK(cudaMalloc3DArray(&c, &i32, make_cudaExtent(5, 4, 3)));
  std::vector<int> cube(5 * 4 * 3);
  for (int z = 0; z < 3; ++z)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 5; ++x) cube[(z * 4 + y) * 5 + x] = z * 100 + y * 10 + x;
  cudaMemcpy3DParms in{};
  in.srcPtr = make_cudaPitchedPtr(cube.data(), 5 * sizeof(int), 5, 4);
  in.dstArray = c;
  in.extent = make_cudaExtent(5, 4, 3);
  in.kind = cudaMemcpyHostToDevice;
  CUDA_OK(cudaMemcpy3D(&in));
  int box[2][2][2] = {};
  cudaMemcpy3DParms outp{};
  outp.srcArray = c;
  outp.srcPos = make_cudaPos(3, 2, 1);
  outp.dstPtr = make_cudaPitchedPtr(box, 2 * sizeof(int), 2, 2);
  outp.extent = make_cudaExtent(2, 2, 2);
  outp.kind = cudaMemcpyDeviceToHost;
  CUDA_OK(cudaMemcpy3D(&outp));
  vt::check(box[0][0][0] == 123 && box[0][1][1] == 134 && box[1][0][1] == 224 && box[1][1][0] == 233,
            "3D array: a 2x2x2 box from (3,2,1) copies out (%d %d %d %d)", box[0][0][0], box[0][1][1],
            box[1][0][1], box[1][1][0]);
  // The same box as a peer copy (device to device) on the one device.
  int* d_box = nullptr;
  CUDA_OK(cudaMalloc(&d_box, sizeof box));
  cudaMemcpy3DPeerParms peer{};
  peer.srcArray = c;
  peer.srcPos = make_cudaPos(3, 2, 1);
  peer.srcDevice = 0;
  peer.dstPtr = make_cudaPitchedPtr(d_box, 2 * sizeof(int), 2, 2);
  peer.dstDevice = 0;
  peer.extent = make_cudaExtent(2, 2, 2);
  CUDA_OK(cudaMemcpy3DPeer(&peer));
  int peer_box[2][2][2] = {};
  CUDA_OK(cudaMemcpy(peer_box, d_box, sizeof peer_box, cudaMemcpyDeviceToHost));
  vt::check(std::memcmp(peer_box, box, sizeof box) == 0, "cudaMemcpy3DPeer on the one device");
  CUDA_OK(cudaFree(d_box));
  CUDA_OK(cudaFreeArray(c));
  *out = a;
}

void sampling_2d(cudaArray_t a) {
  cudaTextureObject_t point = texture_of(a, cudaFilterModePoint, cudaAddressModeClamp, false);
  probe(point, k2D,
        {{{2.5f, 1.5f, 0, 0}, 12, "point: a texel centre"},
         {{0.1f, 0.9f, 0, 0}, 0, "point: inside texel (0,0)"},
         {{-3.0f, 1.2f, 0, 0}, 10, "point clamp: left of the edge"},
         {{100.0f, 100.0f, 0, 0}, 37, "point clamp: past the far corner"}});
  cudaTextureObject_t linear = texture_of(a, cudaFilterModeLinear, cudaAddressModeClamp, false);
  probe(linear, k2D,
        {{{2.0f, 1.5f, 0, 0}, 11.5f, "linear: halfway between two texels"},
         {{2.25f, 1.5f, 0, 0}, 11.75f, "linear: three quarters of the way"},
         {{2.0f, 2.0f, 0, 0}, 16.5f, "bilinear: between four texels"},
         {{0.0f, 0.5f, 0, 0}, 0.0f, "linear clamp: at the left edge"}});
  cudaTextureObject_t wrap = texture_of(a, cudaFilterModePoint, cudaAddressModeWrap, true);
  probe(wrap, k2D,
        {{{1.0f + 2.5f / kW, 1.5f / kH, 0, 0}, 12, "normalized wrap: past 1"},
         {{-0.5f / kW, 1.5f / kH, 0, 0}, 17, "normalized wrap: below 0"}});
  cudaTextureObject_t mirror = texture_of(a, cudaFilterModePoint, cudaAddressModeMirror, true);
  probe(mirror, k2D,
        {{{1.0f + 0.5f / kW, 0.5f / kH, 0, 0}, 7, "normalized mirror: just past 1"},
         {{-1.5f / kW, 0.5f / kH, 0, 0}, 1, "normalized mirror: below 0"}});
  cudaTextureObject_t border = texture_of(a, cudaFilterModePoint, cudaAddressModeBorder, false, 5.5f);
  probe(border, k2D,
        {{{-1.0f, 1.5f, 0, 0}, 5.5f, "border: left of the edge"},
         {{3.5f, 1.5f, 0, 0}, 13, "border: inside"}});
  for (cudaTextureObject_t t : {point, linear, wrap, mirror, border}) CUDA_OK(cudaDestroyTextureObject(t));
}

void eight_bit_reads() {
  // 4 x 2 uchar4: (x * 10, y * 10, x + y, 255).
  cudaChannelFormatDesc f = cudaCreateChannelDesc<uchar4>();
  cudaArray_t a = nullptr;
  CUDA_OK(cudaMallocArray(&a, &f, 4, 2));
  uchar4 host[2][4];
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 4; ++x)
      host[y][x] = make_uchar4(static_cast<unsigned char>(x * 10), static_cast<unsigned char>(y * 10),
                               static_cast<unsigned char>(x + y), 255);
  CUDA_OK(cudaMemcpy2DToArray(a, 0, 0, host, sizeof host[0], sizeof host[0], 2, cudaMemcpyHostToDevice));
  cudaTextureObject_t tex = texture_of(a, cudaFilterModePoint, cudaAddressModeClamp, false);
  float4 at[2] = {{1.5f, 1.5f, 0, 0}, {3.5f, 0.5f, 0, 0}};
  float4* d_at = nullptr;
  uchar4* d_out = nullptr;
  CUDA_OK(cudaMalloc(&d_at, sizeof at));
  CUDA_OK(cudaMalloc(&d_out, 2 * sizeof(uchar4)));
  CUDA_OK(cudaMemcpy(d_at, at, sizeof at, cudaMemcpyHostToDevice));
  sample_uchar4<<<1, 32>>>(tex, d_at, d_out, 2);
  uchar4 got[2];
  CUDA_OK(cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost));
  vt::check(got[0].x == 10 && got[0].y == 10 && got[0].z == 2 && got[0].w == 255 && got[1].x == 30 &&
                got[1].y == 0 && got[1].z == 3,
            "uchar4 element reads: (%d %d %d %d) (%d %d %d)", got[0].x, got[0].y, got[0].z, got[0].w, got[1].x,
            got[1].y, got[1].z);
  CUDA_OK(cudaDestroyTextureObject(tex));
  CUDA_OK(cudaFreeArray(a));
  CUDA_OK(cudaFree(d_at));
  CUDA_OK(cudaFree(d_out));

  // One 8-bit channel read as normalized floats: 0, 255 and 51 (0.2).
  cudaChannelFormatDesc u8 = cudaCreateChannelDesc<unsigned char>();
  cudaArray_t b = nullptr;
  CUDA_OK(cudaMallocArray(&b, &u8, 3, 1));
  const unsigned char bytes[3] = {0, 255, 51};
  CUDA_OK(cudaMemcpy2DToArray(b, 0, 0, bytes, 3, 3, 1, cudaMemcpyHostToDevice));
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = b;
  cudaTextureDesc td{};
  td.filterMode = cudaFilterModeLinear;
  td.readMode = cudaReadModeNormalizedFloat;
  cudaTextureObject_t norm = 0;
  CUDA_OK(cudaCreateTextureObject(&norm, &res, &td, nullptr));
  probe(norm, k2D,
        {{{0.5f, 0.5f, 0, 0}, 0.0f, "normalized float: 0 reads 0"},
         {{1.5f, 0.5f, 0, 0}, 1.0f, "normalized float: 255 reads 1"},
         {{2.5f, 0.5f, 0, 0}, 0.2f, "normalized float: 51 reads 0.2"},
         {{1.0f, 0.5f, 0, 0}, 0.5f, "normalized float, linear: halfway between 0 and 255"}},
        2e-3f);  // a GPU filters 8-bit data in fixed point
  CUDA_OK(cudaDestroyTextureObject(norm));
  CUDA_OK(cudaFreeArray(b));
}

// A float array of `extent` with flags, filled by value(x, y, z).
template <class F>
cudaArray_t filled_array(cudaExtent extent, unsigned flags, F value) {
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
  cudaArray_t a = nullptr;
  CUDA_OK(cudaMalloc3DArray(&a, &f, extent, flags));
  const size_t h = extent.height ? extent.height : 1, d = extent.depth ? extent.depth : 1;
  std::vector<float> host(extent.width * h * d);
  for (size_t z = 0; z < d; ++z)
    for (size_t y = 0; y < h; ++y)
      for (size_t x = 0; x < extent.width; ++x)
        host[(z * h + y) * extent.width + x] = value(static_cast<int>(x), static_cast<int>(y), static_cast<int>(z));
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(host.data(), extent.width * sizeof(float), extent.width, h);
  p.dstArray = a;
  p.extent = make_cudaExtent(extent.width, h, d);
  p.kind = cudaMemcpyHostToDevice;
  CUDA_OK(cudaMemcpy3D(&p));
  return a;
}

void other_shapes() {
  cudaArray_t one = filled_array(make_cudaExtent(6, 0, 0), 0, [](int x, int, int) { return x * 2.0f; });
  cudaTextureObject_t t1 = texture_of(one, cudaFilterModeLinear, cudaAddressModeClamp, false);
  probe(t1, k1D, {{{3.5f, 0, 0, 0}, 6, "1D array: a texel centre"}, {{3.0f, 0, 0, 0}, 5, "1D array: linear halfway"}});

  cudaArray_t cube = filled_array(make_cudaExtent(4, 4, 4), 0,
                                  [](int x, int y, int z) { return z * 100.0f + y * 10.0f + x; });
  cudaTextureObject_t t3 = texture_of(cube, cudaFilterModeLinear, cudaAddressModeClamp, false);
  probe(t3, k3D,
        {{{1.5f, 2.5f, 3.5f, 0}, 321, "3D array: a texel centre"},
         {{2.0f, 2.0f, 2.0f, 0}, 166.5f, "3D array: trilinear between eight texels"}});

  cudaArray_t layers = filled_array(make_cudaExtent(4, 4, 3), cudaArrayLayered,
                                    [](int x, int y, int z) { return z * 1000.0f + y * 10.0f + x; });
  cudaTextureObject_t tl = texture_of(layers, cudaFilterModePoint, cudaAddressModeClamp, false);
  probe(tl, k2DLayered,
        {{{1.5f, 2.5f, 0, 2}, 2021, "layered 2D: layer 2"}, {{3.5f, 0.5f, 0, 0}, 3, "layered 2D: layer 0"}});

  cudaArray_t faces = filled_array(make_cudaExtent(4, 4, 6), cudaArrayCubemap,
                                   [](int, int, int face) { return face * 100.0f + 7; });
  cudaTextureObject_t tc = texture_of(faces, cudaFilterModePoint, cudaAddressModeClamp, true);
  probe(tc, kCubemap,
        {{{1, 0.1f, 0.2f, 0}, 7, "cubemap: +x"},
         {{-1, 0.1f, 0.2f, 0}, 107, "cubemap: -x"},
         {{0.2f, 1, 0.1f, 0}, 207, "cubemap: +y"},
         {{0.2f, -1, 0.1f, 0}, 307, "cubemap: -y"},
         {{0.1f, 0.2f, 1, 0}, 407, "cubemap: +z"},
         {{0.1f, 0.2f, -1, 0}, 507, "cubemap: -z"}});
  for (cudaTextureObject_t t : {t1, t3, tl, tc}) CUDA_OK(cudaDestroyTextureObject(t));
  for (cudaArray_t a : {one, cube, layers, faces}) CUDA_OK(cudaFreeArray(a));
}

void mipmaps() {
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
  cudaMipmappedArray_t mip = nullptr;
  CUDA_OK(cudaMallocMipmappedArray(&mip, &f, make_cudaExtent(16, 16, 0), 5));
  for (unsigned level = 0; level < 5; ++level) {
    cudaArray_t a = nullptr;
    CUDA_OK(cudaGetMipmappedArrayLevel(&a, mip, level));
    const int side = 16 >> level;
    std::vector<float> host(side * side, (level + 1) * 10.0f);
    CUDA_OK(cudaMemcpy2DToArray(a, 0, 0, host.data(), side * sizeof(float), side * sizeof(float), side,
                                   cudaMemcpyHostToDevice));
    cudaExtent extent{};
    CUDA_OK(cudaArrayGetInfo(nullptr, &extent, nullptr, a));
    if (extent.width != static_cast<size_t>(side)) vt::fail("mip level %u is %zu wide, not %d", level, extent.width, side);
  }
  for (cudaTextureFilterMode between : {cudaFilterModePoint, cudaFilterModeLinear}) {
    cudaResourceDesc res{};
    res.resType = cudaResourceTypeMipmappedArray;
    res.res.mipmap.mipmap = mip;
    cudaTextureDesc td{};
    td.normalizedCoords = 1;
    td.filterMode = cudaFilterModePoint;
    td.mipmapFilterMode = between;
    td.maxMipmapLevelClamp = 4;
    cudaTextureObject_t t = 0;
    CUDA_OK(cudaCreateTextureObject(&t, &res, &td, nullptr));
    if (between == cudaFilterModePoint) {
      probe(t, k2DLod,
            {{{0.5f, 0.5f, 0, 0}, 10, "mipmap: level 0"},
             {{0.5f, 0.5f, 0, 2}, 30, "mipmap: level 2"},
             {{0.5f, 0.5f, 0, 1.25f}, 20, "mipmap, point between levels: 1.25 reads level 1"},
             {{0.5f, 0.5f, 0, 9}, 50, "mipmap: past the last level clamps"}});
    } else {
      probe(t, k2DLod, {{{0.5f, 0.5f, 0, 1.5f}, 25, "mipmap, linear between levels: 1.5"}});
    }
    CUDA_OK(cudaDestroyTextureObject(t));
  }
  CUDA_OK(cudaFreeMipmappedArray(mip));
}

void linear_and_pitched() {
  int squares[10];
  for (int i = 0; i < 10; ++i) squares[i] = i * i;
  int* d = nullptr;
  CUDA_OK(cudaMalloc(&d, sizeof squares));
  CUDA_OK(cudaMemcpy(d, squares, sizeof squares, cudaMemcpyHostToDevice));
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeLinear;
  res.res.linear.devPtr = d;
  res.res.linear.desc = cudaCreateChannelDesc<int>();
  res.res.linear.sizeInBytes = sizeof squares;
  cudaTextureDesc td{};
  td.readMode = cudaReadModeElementType;
  cudaTextureObject_t t = 0;
  CUDA_OK(cudaCreateTextureObject(&t, &res, &td, nullptr));
  const int index[4] = {3, 9, -1, 10};
  int *d_index = nullptr, *d_out = nullptr;
  CUDA_OK(cudaMalloc(&d_index, sizeof index));
  CUDA_OK(cudaMalloc(&d_out, sizeof index));
  CUDA_OK(cudaMemcpy(d_index, index, sizeof index, cudaMemcpyHostToDevice));
  fetch_int<<<1, 32>>>(t, d_index, d_out, 4);
  int got[4];
  CUDA_OK(cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost));
  vt::check(got[0] == 9 && got[1] == 81 && got[2] == 0 && got[3] == 0,
            "tex1Dfetch: in range %d %d, out of range %d %d", got[0], got[1], got[2], got[3]);
  CUDA_OK(cudaDestroyTextureObject(t));
  size_t widest = 0;
  const cudaChannelFormatDesc i32 = cudaCreateChannelDesc<int>();
  CUDA_OK(cudaDeviceGetTexture1DLinearMaxWidth(&widest, &i32, 0));
  vt::check(widest >= 10, "cudaDeviceGetTexture1DLinearMaxWidth: %zu elements", widest);

  // Pitched memory: 5 x 3 floats, value y * 10 + x.
  float* p = nullptr;
  size_t pitch = 0;
  CUDA_OK(cudaMallocPitch(&p, &pitch, 5 * sizeof(float), 3));
  float host[3][5];
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x) host[y][x] = y * 10.0f + x;
  CUDA_OK(cudaMemcpy2D(p, pitch, host, sizeof host[0], sizeof host[0], 3, cudaMemcpyHostToDevice));
  cudaResourceDesc pr{};
  pr.resType = cudaResourceTypePitch2D;
  pr.res.pitch2D.devPtr = p;
  pr.res.pitch2D.desc = cudaCreateChannelDesc<float>();
  pr.res.pitch2D.width = 5;
  pr.res.pitch2D.height = 3;
  pr.res.pitch2D.pitchInBytes = pitch;
  cudaTextureDesc ptd{};
  ptd.filterMode = cudaFilterModeLinear;
  cudaTextureObject_t pt = 0;
  CUDA_OK(cudaCreateTextureObject(&pt, &pr, &ptd, nullptr));
  probe(pt, k2D,
        {{{1.0f, 0.5f, 0, 0}, 0.5f, "pitch2D: linear halfway"},
         {{4.5f, 2.5f, 0, 0}, 24, "pitch2D: the last texel's centre"}});
  CUDA_OK(cudaDestroyTextureObject(pt));
  for (void* q : {static_cast<void*>(d), static_cast<void*>(d_index), static_cast<void*>(d_out),
                  static_cast<void*>(p)})
    CUDA_OK(cudaFree(q));
}

void surfaces() {
  constexpr int kSW = 6, kSH = 4;
  cudaChannelFormatDesc f = cudaCreateChannelDesc<int>();
  cudaArray_t a = nullptr;
  CUDA_OK(cudaMallocArray(&a, &f, kSW, kSH, cudaArraySurfaceLoadStore));
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = a;
  cudaSurfaceObject_t s = 0;
  CUDA_OK(cudaCreateSurfaceObject(&s, &res));
  surface_fill<<<dim3(1, 1), dim3(8, 8)>>>(s, kSW, kSH);
  CUDA_OK(cudaGetLastError());
  int back[kSH][kSW] = {};
  CUDA_OK(cudaMemcpy2DFromArray(back, sizeof back[0], a, 0, 0, sizeof back[0], kSH, cudaMemcpyDeviceToHost));
  bool same = true;
  for (int y = 0; y < kSH; ++y)
    for (int x = 0; x < kSW; ++x) same &= back[y][x] == y * 1000 + x;
  vt::check(same, "surface: what a kernel wrote copies out of the array");

  constexpr int kRW = kSW + 1, kRH = kSH + 1;  // one past each edge
  int* d_out = nullptr;
  CUDA_OK(cudaMalloc(&d_out, kRW * kRH * sizeof(int)));
  surface_copy<<<dim3(1, 1), dim3(8, 8)>>>(s, d_out, kRW, kRH);
  int got[kRH][kRW];
  CUDA_OK(cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost));
  vt::check(got[3][5] == 3005 && got[0][0] == 0 && got[2][4] == 2004 && got[4][2] == 0 && got[1][6] == 0,
            "surface reads, zero past the edge: %d %d %d %d %d", got[3][5], got[0][0], got[2][4], got[4][2],
            got[1][6]);

  cudaResourceDesc again{};
  CUDA_OK(cudaGetSurfaceObjectResourceDesc(&again, s));
  vt::check(again.resType == cudaResourceTypeArray && again.res.array.array == a,
            "cudaGetSurfaceObjectResourceDesc names the array");
  CUDA_OK(cudaDestroySurfaceObject(s));
  CUDA_OK(cudaFree(d_out));
  CUDA_OK(cudaFreeArray(a));
}

void queries(cudaArray_t a) {
  cudaTextureObject_t t = texture_of(a, cudaFilterModeLinear, cudaAddressModeWrap, true);
  cudaResourceDesc res{};
  CUDA_OK(cudaGetTextureObjectResourceDesc(&res, t));
  vt::check(res.resType == cudaResourceTypeArray && res.res.array.array == a,
            "cudaGetTextureObjectResourceDesc names the array");
  cudaTextureDesc td{};
  CUDA_OK(cudaGetTextureObjectTextureDesc(&td, t));
  vt::check(td.filterMode == cudaFilterModeLinear && td.addressMode[0] == cudaAddressModeWrap && td.normalizedCoords,
            "cudaGetTextureObjectTextureDesc gives back its modes");
  CUDA_OK(cudaDestroyTextureObject(t));
}

}  // namespace

int main() {
  vt::set_name("textures");
  cudaArray_t a = nullptr;
  arrays_and_copies(&a);
  sampling_2d(a);
  eight_bit_reads();
  other_shapes();
  mipmaps();
  linear_and_pitched();
  surfaces();
  queries(a);
  CUDA_OK(cudaFreeArray(a));
  CUDA_OK(cudaDeviceSynchronize());
  vt::pass();
}
