// printf_program: kernel printf, as students debug with it. The program
// prints host lines between kernels that print; the test reads the whole
// output and checks that each kernel's lines come after the host line before
// its synchronising call and before the host line after it:
//   1. cudaDeviceSynchronize, cudaStreamSynchronize, a blocking cudaMemcpy;
//   2. a kernel printing past cudaLimitPrintfFifoSize (set to 4 KiB before
//      the first launch, as CUDA requires): the FIFO's worth is printed;
//   3. a kernel launched just before exit: printed as the program ends.
#include "common.h"

__global__ void hello(int tag) {
  printf("kernel hello: block %d thread %d tag %d\n", blockIdx.x, threadIdx.x, tag);
}

__global__ void count_to(int n) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    for (int i = 0; i < n; ++i) printf("kernel count %d of %d\n", i, n);
  }
}

int main() {
  vt::set_name("printf_program");
  CUDA_OK(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 4096));

  std::printf("host: before the first kernel\n");
  hello<<<2, 2>>>(7);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  std::printf("host: after cudaDeviceSynchronize\n");

  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  hello<<<1, 1, 0, s>>>(8);
  CUDA_OK(cudaStreamSynchronize(s));
  std::printf("host: after cudaStreamSynchronize\n");

  int* d = nullptr;
  int h = 0;
  CUDA_OK(cudaMalloc(&d, sizeof(int)));
  hello<<<1, 1>>>(9);
  CUDA_OK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
  std::printf("host: after a blocking cudaMemcpy\n");

  count_to<<<1, 1>>>(1000);  // about 22 KB of text into a 4 KiB FIFO
  CUDA_OK(cudaDeviceSynchronize());
  std::printf("host: after the long kernel\n");

  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaStreamDestroy(s));
  hello<<<1, 1>>>(10);  // not synchronised: printed at exit
  CUDA_OK(cudaGetLastError());
  vt::pass();
}
