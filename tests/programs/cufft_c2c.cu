// cufft_c2c: a 256-point complex-to-complex FFT with cuFFT, forward then
// inverse, whose kernels ship inside cuFFT and reach vgpu through the driver
// API (cuFFT enumerates a loaded module's functions through a private table).
// On a GPU it passes; on the sim backend cuFFT plans and launches, and its
// kernel has no CPU implementation: the program gets a clear CUDA error and
// the daemon's log names the kernel.
#include <cufft.h>

#include <cmath>
#include <vector>

#include "common.h"

int main() {
  vt::set_name("cufft_c2c");
  const int n = 256;
  std::vector<cufftComplex> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = {std::cos(0.1f * i), std::sin(0.3f * i)};
  cufftComplex* d = nullptr;
  CUDA_OK(cudaMalloc(&d, n * sizeof(cufftComplex)));
  CUDA_OK(cudaMemcpy(d, x.data(), n * sizeof(cufftComplex), cudaMemcpyHostToDevice));
  cufftHandle plan;
  vt::check(cufftPlan1d(&plan, n, CUFFT_C2C, 1) == CUFFT_SUCCESS, "cufftPlan1d");
  vt::check(cufftExecC2C(plan, d, d, CUFFT_FORWARD) == CUFFT_SUCCESS, "forward transform launched");
  vt::check(cufftExecC2C(plan, d, d, CUFFT_INVERSE) == CUFFT_SUCCESS, "inverse transform launched");
  CUDA_OK(cudaMemcpy(y.data(), d, n * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
  // Forward then inverse is n times the input (cuFFT does not normalise).
  for (int i = 0; i < n; ++i) {
    const float re = y[i].x / n, im = y[i].y / n;
    if (std::fabs(re - x[i].x) > 1e-4f || std::fabs(im - x[i].y) > 1e-4f)
      vt::fail("x[%d] came back as (%g, %g), expected (%g, %g)", i, re, im, x[i].x, x[i].y);
  }
  vt::check(true, "forward and inverse give back all %d points", n);
  cufftDestroy(plan);
  CUDA_OK(cudaFree(d));
  vt::pass();
}
