// pitched_copies: 2D and 3D copies of many rows, every kind of side, no
// kernels (so it runs on sim with no plug-in):
//   - cudaMemcpy2D of 4096 rows host to pitched device memory and back, into
//     a host buffer whose rows have gaps (the gaps must stay untouched);
//   - a sub-rectangle device to device between two pitched allocations;
//   - cudaMemcpy2DAsync both ways with pinned host memory, in a stream;
//   - cudaMemcpy3D of a 64 x 64 x 16 box into a cudaMalloc3D volume and out;
//   - a row wider than the guest stages at once (8 MiB rows).
// The integration test counts vgpud's requests around it: a 2D copy must not
// cost one request per row.
#include <cstring>
#include <vector>

#include "common.h"

namespace {

constexpr size_t kRows = 4096;
constexpr size_t kWidth = 300;  // bytes a row

unsigned char at(size_t y, size_t x, unsigned seed) {
  return static_cast<unsigned char>((y * 131 + x * 7 + seed) & 0xff);
}

}  // namespace

int main() {
  vt::set_name("pitched_copies");
  unsigned char* dev = nullptr;
  size_t pitch = 0;
  CUDA_OK(cudaMallocPitch(reinterpret_cast<void**>(&dev), &pitch, kWidth, kRows));
  vt::check(pitch >= kWidth, "cudaMallocPitch: pitch %zu for rows of %zu bytes", pitch, kWidth);

  // In from packed host rows, out into host rows with gaps.
  std::vector<unsigned char> packed(kRows * kWidth);
  for (size_t y = 0; y < kRows; ++y)
    for (size_t x = 0; x < kWidth; ++x) packed[y * kWidth + x] = at(y, x, 1);
  CUDA_OK(cudaMemcpy2D(dev, pitch, packed.data(), kWidth, kWidth, kRows, cudaMemcpyHostToDevice));
  const size_t host_pitch = kWidth + 37;
  std::vector<unsigned char> gapped(kRows * host_pitch, 0xEE);
  CUDA_OK(cudaMemcpy2D(gapped.data(), host_pitch, dev, pitch, kWidth, kRows, cudaMemcpyDeviceToHost));
  size_t wrong = 0, gaps_touched = 0;
  for (size_t y = 0; y < kRows; ++y) {
    for (size_t x = 0; x < kWidth; ++x) wrong += gapped[y * host_pitch + x] != at(y, x, 1);
    for (size_t x = kWidth; x < host_pitch; ++x) gaps_touched += gapped[y * host_pitch + x] != 0xEE;
  }
  vt::check(wrong == 0 && gaps_touched == 0,
            "cudaMemcpy2D of %zu rows in and out (%zu bytes wrong, %zu gap bytes written)", kRows, wrong,
            gaps_touched);

  // A sub-rectangle device to device: rows 100..1099, columns 20..219, to
  // another pitched allocation at column 5.
  unsigned char* other = nullptr;
  size_t other_pitch = 0;
  CUDA_OK(cudaMallocPitch(reinterpret_cast<void**>(&other), &other_pitch, kWidth, 1000));
  CUDA_OK(cudaMemset2D(other, other_pitch, 0, kWidth, 1000));
  CUDA_OK(cudaMemcpy2D(other + 5, other_pitch, dev + 100 * pitch + 20, pitch, 200, 1000,
                       cudaMemcpyDeviceToDevice));
  std::vector<unsigned char> sub(1000 * kWidth);
  CUDA_OK(cudaMemcpy2D(sub.data(), kWidth, other, other_pitch, kWidth, 1000, cudaMemcpyDeviceToHost));
  wrong = 0;
  for (size_t y = 0; y < 1000; ++y)
    for (size_t x = 0; x < kWidth; ++x) {
      const bool inside = x >= 5 && x < 205;
      wrong += sub[y * kWidth + x] != (inside ? at(y + 100, x - 5 + 20, 1) : 0);
    }
  vt::check(wrong == 0, "cudaMemcpy2D of a sub-rectangle device to device (%zu bytes wrong)", wrong);

  // Pinned host memory, asynchronously in a stream.
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  unsigned char* pinned = nullptr;
  CUDA_OK(cudaMallocHost(reinterpret_cast<void**>(&pinned), kRows * host_pitch));
  for (size_t y = 0; y < kRows; ++y)
    for (size_t x = 0; x < host_pitch; ++x) pinned[y * host_pitch + x] = at(y, x, 2);
  CUDA_OK(cudaMemcpy2DAsync(dev, pitch, pinned, host_pitch, kWidth, kRows, cudaMemcpyHostToDevice, s));
  CUDA_OK(cudaStreamSynchronize(s));
  std::memset(pinned, 0xEE, kRows * host_pitch);
  CUDA_OK(cudaMemcpy2DAsync(pinned, host_pitch, dev, pitch, kWidth, kRows, cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s));
  wrong = gaps_touched = 0;
  for (size_t y = 0; y < kRows; ++y) {
    for (size_t x = 0; x < kWidth; ++x) wrong += pinned[y * host_pitch + x] != at(y, x, 2);
    for (size_t x = kWidth; x < host_pitch; ++x) gaps_touched += pinned[y * host_pitch + x] != 0xEE;
  }
  vt::check(wrong == 0 && gaps_touched == 0,
            "cudaMemcpy2DAsync with pinned memory in and out (%zu bytes wrong, %zu gap bytes written)",
            wrong, gaps_touched);

  // A box of a 3D volume.
  const cudaExtent volume_extent = make_cudaExtent(100, 70, 20);
  cudaPitchedPtr volume{};
  CUDA_OK(cudaMalloc3D(&volume, volume_extent));
  const size_t bw = 64, bh = 64, bd = 16;
  std::vector<unsigned char> box(bw * bh * bd), box_back(bw * bh * bd, 0);
  for (size_t i = 0; i < box.size(); ++i) box[i] = static_cast<unsigned char>(i * 13 + 5);
  cudaMemcpy3DParms in{};
  in.srcPtr = make_cudaPitchedPtr(box.data(), bw, bw, bh);
  in.dstPtr = volume;
  in.dstPos = make_cudaPos(3, 2, 1);
  in.extent = make_cudaExtent(bw, bh, bd);
  in.kind = cudaMemcpyHostToDevice;
  CUDA_OK(cudaMemcpy3D(&in));
  cudaMemcpy3DParms out{};
  out.srcPtr = volume;
  out.srcPos = make_cudaPos(3, 2, 1);
  out.dstPtr = make_cudaPitchedPtr(box_back.data(), bw, bw, bh);
  out.extent = make_cudaExtent(bw, bh, bd);
  out.kind = cudaMemcpyDeviceToHost;
  CUDA_OK(cudaMemcpy3D(&out));
  vt::check(box_back == box, "cudaMemcpy3D of a %zux%zux%zu box into a volume and out", bw, bh, bd);

  // Rows wider than one staged chunk.
  const size_t wide = 8u << 20, wide_rows = 3, wide_pitch = wide + 512;
  unsigned char* wide_dev = nullptr;
  CUDA_OK(cudaMalloc(&wide_dev, wide_pitch * wide_rows));
  std::vector<unsigned char> wide_host(wide * wide_rows), wide_back(wide * wide_rows, 0);
  for (size_t i = 0; i < wide_host.size(); ++i) wide_host[i] = static_cast<unsigned char>(i % 251);
  CUDA_OK(cudaMemcpy2D(wide_dev, wide_pitch, wide_host.data(), wide, wide, wide_rows, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy2D(wide_back.data(), wide, wide_dev, wide_pitch, wide, wide_rows, cudaMemcpyDeviceToHost));
  vt::check(wide_back == wide_host, "cudaMemcpy2D of %zu rows of %zu MiB", wide_rows, wide >> 20);

  CUDA_OK(cudaFree(wide_dev));
  CUDA_OK(cudaFree(volume.ptr));
  CUDA_OK(cudaFreeHost(pinned));
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFree(other));
  CUDA_OK(cudaFree(dev));
  vt::pass();
}
