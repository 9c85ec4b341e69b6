// pinned_memory: pinned host memory (cudaMallocHost, cudaHostAlloc) used the
// ways programs use it, with the results checked. Under vgpu a pinned block
// lives in the VM's data area and copies use it in place; what does not fit
// there is ordinary memory. Both must give the same results:
//
//   1. a large pinned block first, so the kernels' module is loaded while
//      pinned memory holds most of the data area;
//   2. sync and async copies from and to pinned memory, and at offsets in it,
//      around a kernel; pageable copies next to them;
//   3. more pinned memory than a data area holds (the rest is ordinary);
//   4. cudaFreeHost while an asynchronous copy into the block is in flight:
//      the copy lands before the block can be handed out again;
//   5. a kernel given cudaMallocHost's pointer itself (zero-copy, as unified
//      addressing allows), at its start and at an offset, the CPU writing
//      between launches and reading after each synchronisation.
#include <cstdint>
#include <cstring>
#include <vector>

#include "common.h"

__global__ void scale_add(float* data, float scale, float offset, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * scale + offset;
}

namespace {

constexpr int kBlock = 256;

int grid_for(int n) { return (n + kBlock - 1) / kBlock; }

void check_floats(const float* got, int n, float scale, float offset, const char* what) {
  for (int i = 0; i < n; ++i) {
    const float want = static_cast<float>(i % 1000) * scale + offset;
    if (got[i] != want) vt::fail("%s: element %d is %g, expected %g", what, i, got[i], want);
  }
  vt::check(true, "%s: %d elements correct", what, n);
}

void fill(float* p, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<float>(i % 1000);
}

}  // namespace

int main() {
  vt::set_name("pinned_memory");

  // 1. Most of a 64 MiB data area pinned before the first launch.
  const int big_n = 10 << 20;  // 40 MiB of floats
  float* big = nullptr;
  CUDA_OK(cudaMallocHost(&big, big_n * sizeof(float)));
  fill(big, big_n);
  float* dbig = nullptr;
  CUDA_OK(cudaMalloc(&dbig, big_n * sizeof(float)));
  CUDA_OK(cudaMemcpy(dbig, big, big_n * sizeof(float), cudaMemcpyHostToDevice));
  scale_add<<<grid_for(big_n), kBlock>>>(dbig, 2.0f, 1.0f, big_n);
  LAUNCH_OK();
  std::memset(big, 0, big_n * sizeof(float));
  CUDA_OK(cudaMemcpy(big, dbig, big_n * sizeof(float), cudaMemcpyDeviceToHost));
  check_floats(big, big_n, 2.0f, 1.0f, "40 MiB pinned, kernel loaded after pinning, round trip");

  // 2. A pageable buffer next to the pinned one (its copies are staged), and
  //    asynchronous pinned copies on a stream, at offsets in the block.
  const int n = 1 << 20;
  std::vector<float> pageable(n);
  fill(pageable.data(), n);
  float* d = nullptr;
  CUDA_OK(cudaMalloc(&d, n * sizeof(float)));
  CUDA_OK(cudaMemcpy(d, pageable.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  scale_add<<<grid_for(n), kBlock>>>(d, 3.0f, -1.0f, n);
  LAUNCH_OK();
  std::vector<float> back(n);
  CUDA_OK(cudaMemcpy(back.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  check_floats(back.data(), n, 3.0f, -1.0f, "pageable copies while pinned memory is held");

  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  fill(big, n);
  const int half = n / 2;
  CUDA_OK(cudaMemcpyAsync(d, big, half * sizeof(float), cudaMemcpyHostToDevice, s));
  CUDA_OK(cudaMemcpyAsync(d + half, big + half, (n - half) * sizeof(float),
                          cudaMemcpyHostToDevice, s));
  scale_add<<<grid_for(n), kBlock, 0, s>>>(d, 0.5f, 4.0f, n);
  LAUNCH_OK();
  float* out = big + n;  // another part of the same block
  CUDA_OK(cudaMemcpyAsync(out, d, n * sizeof(float), cudaMemcpyDeviceToHost, s));
  CUDA_OK(cudaStreamSynchronize(s));
  check_floats(out, n, 0.5f, 4.0f, "async pinned copies at offsets in a block, on a stream");

  // 3. Past what the data area holds: cudaHostAlloc still succeeds (ordinary
  //    memory), and copies through it are just as right.
  std::vector<float*> extra;
  for (int i = 0; i < 3; ++i) {
    float* p = nullptr;
    CUDA_OK(cudaHostAlloc(&p, 16 << 20, cudaHostAllocDefault));
    extra.push_back(p);
  }
  for (float* p : extra) {
    fill(p, n);
    CUDA_OK(cudaMemcpy(d, p, n * sizeof(float), cudaMemcpyHostToDevice));
    scale_add<<<grid_for(n), kBlock>>>(d, 1.0f, 2.0f, n);
    LAUNCH_OK();
    CUDA_OK(cudaMemcpy(p + n, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    check_floats(p + n, n, 1.0f, 2.0f, "16 MiB of pinned memory beyond the first 40 MiB");
  }
  for (float* p : extra) CUDA_OK(cudaFreeHost(p));
  CUDA_OK(cudaFreeHost(big));

  // 4. Freed with a copy into it in flight: that copy must not land in the
  //    block handed out next.
  CUDA_OK(cudaMemset(d, 0x11, n * sizeof(float)));
  for (int round = 0; round < 20; ++round) {
    unsigned char* a = nullptr;
    CUDA_OK(cudaMallocHost(&a, n * sizeof(float)));
    scale_add<<<grid_for(n), kBlock, 0, s>>>(d, 1.0f, 0.0f, n);  // keeps the stream busy
    LAUNCH_OK();
    CUDA_OK(cudaMemcpyAsync(a, d, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    CUDA_OK(cudaFreeHost(a));
    unsigned char* b = nullptr;
    CUDA_OK(cudaMallocHost(&b, n * sizeof(float)));
    std::memset(b, 0x22, n * sizeof(float));
    CUDA_OK(cudaDeviceSynchronize());
    for (int i = 0; i < n * static_cast<int>(sizeof(float)); ++i) {
      if (b[i] != 0x22) vt::fail("round %d: a freed block's copy landed in a new block", round);
    }
    CUDA_OK(cudaFreeHost(b));
  }
  vt::check(true, "a copy into a block freed while in flight never reaches the next block");

  // 5. Zero-copy: the kernel reads and writes the pinned block in place.
  {
    float* z = nullptr;
    CUDA_OK(cudaMallocHost(&z, n * sizeof(float)));
    fill(z, n);
    scale_add<<<grid_for(n), kBlock>>>(z, 2.0f, 1.0f, n);
    LAUNCH_OK();
    CUDA_OK(cudaDeviceSynchronize());
    check_floats(z, n, 2.0f, 1.0f, "a kernel on cudaMallocHost memory at its host pointer");
    fill(z, n);  // the CPU writes again; the next launch must see it
    scale_add<<<grid_for(n - 100), kBlock, 0, s>>>(z + 100, 3.0f, 0.5f, n - 100);
    LAUNCH_OK();
    CUDA_OK(cudaStreamSynchronize(s));
    auto offset_result = [](const float* p, int n, const char* what) {
      for (int i = 0; i < n; ++i) {
        const float v = static_cast<float>(i % 1000);
        const float want = i < 100 ? v : v * 3.0f + 0.5f;
        if (p[i] != want) vt::fail("%s: element %d is %g, expected %g", what, i, p[i], want);
      }
      vt::check(true, "%s: %d elements correct", what, n);
    };
    offset_result(z, n, "a kernel on cudaMallocHost memory at an offset (the CPU's writes seen)");
    // A copy from the block after kernels wrote it carries what they wrote.
    std::vector<float> back(n);
    CUDA_OK(cudaMemcpy(d, z, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(back.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
    offset_result(back.data(), n, "a copy from the block after the kernel");
    CUDA_OK(cudaFreeHost(z));
  }

  vt::check(cudaFreeHost(reinterpret_cast<void*>(0x1000)) == cudaErrorInvalidValue,
            "cudaFreeHost of a pointer it never gave is cudaErrorInvalidValue");
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaFree(dbig));
  vt::pass();
}
