// cublas_sgemm: single-precision matrix products with cuBLAS, whose kernels
// ship inside cuBLAS and reach vgpu through the driver API: 64x64, and 275x275
// (the size of NVIDIA's simpleCUBLAS sample, for which cuBLAS splits the sum
// and asks the driver's private table 21318c60 for slots 51 and 39 first). On
// a GPU it passes; on the sim backend cuBLAS starts and launches both, and
// its kernels have no CPU implementation: the program gets a clear CUDA
// error and its stderr and the daemon's log name the kernel.
#include <cublas_v2.h>

#include <vector>

#include "common.h"

namespace {

struct Product {
  int n;
  std::vector<float> a, b, c;
  float *da = nullptr, *db = nullptr, *dc = nullptr;

  explicit Product(int size) : n(size), a(n * n), b(n * n), c(n * n, -1.0f) {
    for (int i = 0; i < n * n; ++i) {
      a[i] = static_cast<float>(i % 7);
      b[i] = static_cast<float>(i % 5) - 2.0f;
    }
    CUDA_OK(cudaMalloc(&da, n * n * sizeof(float)));
    CUDA_OK(cudaMalloc(&db, n * n * sizeof(float)));
    CUDA_OK(cudaMalloc(&dc, n * n * sizeof(float)));
    CUDA_OK(cudaMemcpy(da, a.data(), n * n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(db, b.data(), n * n * sizeof(float), cudaMemcpyHostToDevice));
  }

  void launch(cublasHandle_t handle) {
    const float alpha = 1.0f, beta = 0.0f;
    const cublasStatus_t s = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, da, n,
                                         db, n, &beta, dc, n);
    vt::check(s == CUBLAS_STATUS_SUCCESS, "cublasSgemm launched (%dx%d, status %d)", n, n,
              static_cast<int>(s));
  }

  // Column-major: c(i, j) = sum_k a(i, k) * b(k, j). Small integers: exact.
  void verify() {
    CUDA_OK(cudaMemcpy(c.data(), dc, n * n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < n; ++i) {
        float want = 0;
        for (int k = 0; k < n; ++k) want += a[k * n + i] * b[j * n + k];
        if (c[j * n + i] != want) vt::fail("c(%d,%d) = %g, expected %g", i, j, c[j * n + i], want);
      }
    }
    vt::check(true, "all %d products correct (%dx%d)", n * n, n, n);
  }
};

}  // namespace

int main() {
  vt::set_name("cublas_sgemm");
  Product small(64), large(275);
  cublasHandle_t handle;
  vt::check(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
  small.launch(handle);
  large.launch(handle);
  small.verify();
  large.verify();
  cublasDestroy(handle);
  vt::pass();
}
