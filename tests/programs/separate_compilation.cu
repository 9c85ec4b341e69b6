// separate_compilation: a program of two objects built with -rdc=true (relocatable device
// code, as a course's larger projects and CMake's CUDA_SEPARABLE_COMPILATION build them):
// this object's kernels call device functions and use a __device__ variable that the other
// object (separate_compilation_lib.cu) defines, both print from the device, and both
// instantiate one inline template; a kernel of the other object is launched from here too.
#include <vector>

#include "common.h"
#include "separate_compilation.h"

__global__ void scale_and_count(float* data, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    data[i] = lib_scale(data[i], factor) + twice(1.0f);  // lib_scale: the other object's
    lib_count_one();
  }
  if (i == 0) printf("object 1: scaled by %.1f\n", factor);
}

int main() {
  vt::set_name("separate_compilation");
  constexpr int kN = 1000;
  std::vector<float> h(kN);
  for (int i = 0; i < kN; ++i) h[i] = static_cast<float>(i);
  float* d = nullptr;
  CUDA_OK(cudaMalloc(&d, kN * sizeof(float)));
  CUDA_OK(cudaMemcpy(d, h.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  int zero = 0;
  CUDA_OK(cudaMemcpyToSymbol(lib_counter, &zero, sizeof zero));

  scale_and_count<<<(kN + 127) / 128, 128>>>(d, kN, 3.0f);
  LAUNCH_OK();
  lib_add_offset<<<(kN + 127) / 128, 128>>>(d, kN, 0.5f);  // the other object's kernel
  LAUNCH_OK();
  CUDA_OK(cudaDeviceSynchronize());

  std::vector<float> out(kN);
  CUDA_OK(cudaMemcpy(out.data(), d, kN * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += out[i] != 3.0f * i + 2.0f + twice(0.5f) / 2;
  vt::check(wrong == 0, "kernels of both objects, calling across them, computed %d values (%d wrong)", kN, wrong);
  int counted = 0;
  CUDA_OK(cudaMemcpyFromSymbol(&counted, lib_counter, sizeof counted));
  vt::check(counted == kN, "the other object's __device__ counter, read from the host: %d (want %d)", counted, kN);
  CUDA_OK(cudaFree(d));
  vt::pass();
}
