// vector_add: c = a + b on about a million floats over several thousand
// blocks (the last one partial), launched once with <<<>>> and once through
// cudaLaunchKernel; then a 2-D grid of 2-D blocks over a width x height image.
#include <cstdint>
#include <cstring>
#include <vector>

#include "common.h"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void vector_add_2d(const float* a, const float* b, float* c, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) c[y * width + x] = a[y * width + x] + b[y * width + x];
}

static void check_sum(const char* what, const std::vector<float>& a, const std::vector<float>& b,
                      const std::vector<float>& c, int n) {
  for (int i = 0; i < n; ++i)
    if (c[i] != a[i] + b[i])
      vt::fail("%s: c[%d] = %g, expected %g", what, i, c[i], a[i] + b[i]);
  vt::check(true, "%s: all %d sums correct", what, n);
}

int main() {
  vt::set_name("vector_add");
  const int n = 1000003;   // not a multiple of the block size
  const int guard = 64;    // elements past n that no thread may touch
  const size_t bytes = (n + guard) * sizeof(float);

  std::vector<float> a(n + guard), b(n + guard), c(n + guard);
  for (int i = 0; i < n + guard; ++i) {
    a[i] = static_cast<float>(i);              // < 2^24: exact
    b[i] = static_cast<float>(2 * (i % 4096));
  }
  float *da, *db, *dc;
  CUDA_OK(cudaMalloc(&da, bytes));
  CUDA_OK(cudaMalloc(&db, bytes));
  CUDA_OK(cudaMalloc(&dc, bytes));
  CUDA_OK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dc, 0xff, bytes));  // 0xffffffff is a NaN: never a correct sum

  cudaFuncAttributes attr{};
  CUDA_OK(cudaFuncGetAttributes(&attr, vector_add));
  vt::check(attr.maxThreadsPerBlock >= 256, "cudaFuncGetAttributes: maxThreadsPerBlock %d >= 256",
            attr.maxThreadsPerBlock);

  // 1. <<<>>>
  const int block = 256;
  const int grid = (n + block - 1) / block;
  vector_add<<<grid, block>>>(da, db, dc, n);
  LAUNCH_OK();
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost));
  check_sum("<<<>>> launch", a, b, c, n);
  bool untouched = true;
  for (int i = n; i < n + guard; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &c[i], sizeof bits);
    untouched = untouched && bits == 0xffffffffu;
  }
  vt::check(untouched, "%d blocks of %d: the %d elements past n are untouched", grid, block, guard);

  // 2. cudaLaunchKernel, with reversed inputs into a cleared output.
  CUDA_OK(cudaMemset(dc, 0, bytes));
  int count = n;
  void* args[] = {&db, &da, &dc, &count};
  CUDA_OK(cudaLaunchKernel(reinterpret_cast<const void*>(vector_add), dim3(grid), dim3(block), args,
                           0, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost));
  check_sum("cudaLaunchKernel", b, a, c, n);

  // 3. 2-D: 1000 x 999 elements in 16 x 16 blocks (both edges partial).
  const int width = 1000, height = 999;
  CUDA_OK(cudaMemset(dc, 0, bytes));
  dim3 block2(16, 16), grid2((width + 15) / 16, (height + 15) / 16);
  vector_add_2d<<<grid2, block2>>>(da, db, dc, width, height);
  LAUNCH_OK();
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost));
  check_sum("2-D grid", a, b, c, width * height);
  bool rest_zero = true;
  for (int i = width * height; i < n + guard; ++i) rest_zero = rest_zero && c[i] == 0.0f;
  vt::check(rest_zero, "2-D grid %ux%u of %ux%u: nothing written past width*height", grid2.x,
            grid2.y, block2.x, block2.y);

  CUDA_OK(cudaFree(da));
  CUDA_OK(cudaFree(db));
  CUDA_OK(cudaFree(dc));
  vt::pass();
}
