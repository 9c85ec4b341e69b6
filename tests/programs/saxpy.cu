// saxpy: y = a*x + y on 1M floats, the classic first CUDA program.
#include <vector>

#include "common.h"

__global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
  vt::set_name("saxpy");
  const int n = 1 << 20;
  const float a = 2.0f;
  // Small integers: every result is exact in float, with or without FMA.
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1000);
    y[i] = static_cast<float>((i % 77) * 2);
  }

  float *dx = nullptr, *dy = nullptr;
  CUDA_OK(cudaMalloc(&dx, n * sizeof(float)));
  CUDA_OK(cudaMalloc(&dy, n * sizeof(float)));
  CUDA_OK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  const int block = 256;
  saxpy<<<(n + block - 1) / block, block>>>(a, dx, dy, n);
  LAUNCH_OK();
  CUDA_OK(cudaDeviceSynchronize());

  std::vector<float> out(n);
  CUDA_OK(cudaMemcpy(out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0, first = -1;
  for (int i = 0; i < n; ++i) {
    if (out[i] != a * x[i] + y[i]) {
      if (first < 0) first = i;
      ++wrong;
    }
  }
  if (wrong)
    vt::fail("%d of %d results wrong, first y[%d] = %g, expected %g", wrong, n, first,
             out[first], a * x[first] + y[first]);
  vt::check(true, "y = %g*x + y correct for all %d elements", a, n);

  CUDA_OK(cudaFree(dx));
  CUDA_OK(cudaFree(dy));
  vt::pass();
}
