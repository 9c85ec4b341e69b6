// cublas_sgemm: a 64x64 single-precision matrix product with cuBLAS, whose
// kernels ship inside cuBLAS and reach vgpu through the driver API. On a GPU
// it passes; on the sim backend cuBLAS starts and launches, and the kernel
// has no CPU implementation: the program gets a clear CUDA error and the
// daemon's log names the kernel.
#include <cublas_v2.h>

#include <vector>

#include "common.h"

int main() {
  vt::set_name("cublas_sgemm");
  const int n = 64;
  std::vector<float> a(n * n), b(n * n), c(n * n, -1.0f);
  for (int i = 0; i < n * n; ++i) {
    a[i] = static_cast<float>(i % 7);
    b[i] = static_cast<float>(i % 5) - 2.0f;
  }
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  CUDA_OK(cudaMalloc(&da, n * n * sizeof(float)));
  CUDA_OK(cudaMalloc(&db, n * n * sizeof(float)));
  CUDA_OK(cudaMalloc(&dc, n * n * sizeof(float)));
  CUDA_OK(cudaMemcpy(da, a.data(), n * n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(db, b.data(), n * n * sizeof(float), cudaMemcpyHostToDevice));
  cublasHandle_t handle;
  vt::check(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
  const float alpha = 1.0f, beta = 0.0f;
  vt::check(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, da, n, db, n, &beta, dc,
                        n) == CUBLAS_STATUS_SUCCESS,
            "cublasSgemm launched");
  CUDA_OK(cudaMemcpy(c.data(), dc, n * n * sizeof(float), cudaMemcpyDeviceToHost));
  // Column-major: c(i, j) = sum_k a(i, k) * b(k, j). Small integers: exact.
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) {
      float want = 0;
      for (int k = 0; k < n; ++k) want += a[k * n + i] * b[j * n + k];
      if (c[j * n + i] != want) vt::fail("c(%d,%d) = %g, expected %g", i, j, c[j * n + i], want);
    }
  }
  vt::check(true, "all %d products correct", n * n);
  cublasDestroy(handle);
  vt::pass();
}
