// cuda_libraries LIBRARY: one small job with a CUDA library whose kernels
// ship inside it and reach vgpu through the driver API:
//   curand    1024 uniform floats from the default generator, each in (0, 1]
//   cusparse  y = A x with A a 4x4 diagonal CSR matrix (cusparseSpMV)
//   cusolver  the Cholesky factor of a 4x4 SPD matrix (cusolverDnSpotrf)
// On a GPU each passes; on the sim backend each library starts, plans and
// launches, and its first kernel has no CPU implementation: the program gets
// a clear CUDA error and the daemon's log names the kernel.
#include <cublas_v2.h>
#include <curand.h>
#include <cusolverDn.h>
#include <cusparse.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common.h"

namespace {

void run_curand() {
  const int n = 1024;
  float* d = nullptr;
  CUDA_OK(cudaMalloc(&d, n * sizeof(float)));
  curandGenerator_t g;
  vt::check(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT) == CURAND_STATUS_SUCCESS,
            "curandCreateGenerator");
  vt::check(curandSetPseudoRandomGeneratorSeed(g, 1234) == CURAND_STATUS_SUCCESS, "seeded");
  const curandStatus_t s = curandGenerateUniform(g, d, n);
  CUDA_OK(cudaDeviceSynchronize());
  vt::check(s == CURAND_STATUS_SUCCESS, "curandGenerateUniform");
  std::vector<float> h(n);
  CUDA_OK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    if (!(h[i] > 0.0f && h[i] <= 1.0f)) vt::fail("value %d is %g, outside (0, 1]", i, h[i]);
  }
  vt::check(true, "all %d values in (0, 1]", n);
  curandDestroyGenerator(g);
  CUDA_OK(cudaFree(d));
}

void run_cusparse() {
  const int n = 4;
  const int offsets[n + 1] = {0, 1, 2, 3, 4}, columns[n] = {0, 1, 2, 3};
  const float values[n] = {1, 2, 3, 4}, x[n] = {1, 2, 3, 4};
  int *d_offsets, *d_columns;
  float *d_values, *d_x, *d_y;
  CUDA_OK(cudaMalloc(&d_offsets, sizeof offsets));
  CUDA_OK(cudaMalloc(&d_columns, sizeof columns));
  CUDA_OK(cudaMalloc(&d_values, sizeof values));
  CUDA_OK(cudaMalloc(&d_x, sizeof x));
  CUDA_OK(cudaMalloc(&d_y, sizeof x));
  CUDA_OK(cudaMemcpy(d_offsets, offsets, sizeof offsets, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_columns, columns, sizeof columns, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_values, values, sizeof values, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_x, x, sizeof x, cudaMemcpyHostToDevice));
  cusparseHandle_t h;
  vt::check(cusparseCreate(&h) == CUSPARSE_STATUS_SUCCESS, "cusparseCreate");
  cusparseSpMatDescr_t a;
  cusparseDnVecDescr_t vx, vy;
  vt::check(cusparseCreateCsr(&a, n, n, n, d_offsets, d_columns, d_values, CUSPARSE_INDEX_32I,
                              CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F) ==
                    CUSPARSE_STATUS_SUCCESS &&
                cusparseCreateDnVec(&vx, n, d_x, CUDA_R_32F) == CUSPARSE_STATUS_SUCCESS &&
                cusparseCreateDnVec(&vy, n, d_y, CUDA_R_32F) == CUSPARSE_STATUS_SUCCESS,
            "matrix and vectors described");
  const float alpha = 1, beta = 0;
  size_t bytes = 0;
  vt::check(cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, vx, &beta, vy,
                                    CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &bytes) == CUSPARSE_STATUS_SUCCESS,
            "cusparseSpMV_bufferSize");
  void* buffer = nullptr;
  CUDA_OK(cudaMalloc(&buffer, bytes + 1));
  vt::check(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, vx, &beta, vy, CUDA_R_32F,
                         CUSPARSE_SPMV_ALG_DEFAULT, buffer) == CUSPARSE_STATUS_SUCCESS,
            "cusparseSpMV launched");
  float y[n];
  CUDA_OK(cudaMemcpy(y, d_y, sizeof y, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    if (y[i] != values[i] * x[i]) vt::fail("y[%d] = %g, expected %g", i, y[i], values[i] * x[i]);
  }
  vt::check(true, "y = A x");
  cusparseDestroySpMat(a);
  cusparseDestroyDnVec(vx);
  cusparseDestroyDnVec(vy);
  cusparseDestroy(h);
}

void run_cusolver() {
  const int n = 4;
  const float a[n * n] = {4, 1, 0, 0, 1, 4, 1, 0, 0, 1, 4, 1, 0, 0, 1, 4};  // symmetric, positive definite
  float* d_a = nullptr;
  CUDA_OK(cudaMalloc(&d_a, sizeof a));
  CUDA_OK(cudaMemcpy(d_a, a, sizeof a, cudaMemcpyHostToDevice));
  cusolverDnHandle_t h;
  vt::check(cusolverDnCreate(&h) == CUSOLVER_STATUS_SUCCESS, "cusolverDnCreate");
  int work = 0;
  vt::check(cusolverDnSpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, d_a, n, &work) ==
                CUSOLVER_STATUS_SUCCESS,
            "cusolverDnSpotrf_bufferSize");
  float* d_work = nullptr;
  int* d_info = nullptr;
  CUDA_OK(cudaMalloc(&d_work, (work + 1) * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_info, sizeof(int)));
  vt::check(cusolverDnSpotrf(h, CUBLAS_FILL_MODE_LOWER, n, d_a, n, d_work, work, d_info) ==
                CUSOLVER_STATUS_SUCCESS,
            "cusolverDnSpotrf launched");
  int info = -1;
  CUDA_OK(cudaMemcpy(&info, d_info, sizeof info, cudaMemcpyDeviceToHost));
  vt::check(info == 0, "the matrix is positive definite (info 0)");
  float l[n * n];
  CUDA_OK(cudaMemcpy(l, d_a, sizeof l, cudaMemcpyDeviceToHost));
  // Column-major, lower triangle: L L^T must give A back.
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j <= i; ++j) {
      float sum = 0;
      for (int k = 0; k <= j; ++k) sum += l[k * n + i] * l[k * n + j];
      if (std::fabs(sum - a[j * n + i]) > 1e-4f) vt::fail("(L L^T)(%d,%d) = %g, expected %g", i, j, sum, a[j * n + i]);
    }
  }
  vt::check(true, "L L^T = A");
  cusolverDnDestroy(h);
}

}  // namespace

int main(int argc, char** argv) {
  const char* library = argc > 1 ? argv[1] : "";
  vt::set_name("cuda_libraries");
  if (!std::strcmp(library, "curand")) run_curand();
  else if (!std::strcmp(library, "cusparse")) run_cusparse();
  else if (!std::strcmp(library, "cusolver")) run_cusolver();
  else vt::fail("usage: cuda_libraries curand|cusparse|cusolver");
  vt::pass();
}
