// many_copies: 60,000 small asynchronous copies from pageable memory queued
// with no synchronize between them (cuBLASXt copies tiles row by row this
// way), then one synchronize. Each copy is answered: more answers than the
// reply ring holds, so the program must take them while it queues (vgpud
// reads no more requests from a process whose answers wait unread).
#include <vector>

#include "common.h"

int main() {
  vt::set_name("many_copies");
  const int copies = 60000;
  std::vector<int> pageable(copies), back(copies, -1);
  for (int i = 0; i < copies; ++i) pageable[i] = i * 3 + 1;
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  int* dev = nullptr;
  CUDA_OK(cudaMalloc(&dev, copies * sizeof(int)));
  for (int i = 0; i < copies; ++i)
    CUDA_OK(cudaMemcpyAsync(dev + i, &pageable[i], sizeof(int), cudaMemcpyHostToDevice, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemcpy(back.data(), dev, copies * sizeof(int), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < copies; ++i) wrong += back[i] != i * 3 + 1;
  vt::check(wrong == 0, "%d asynchronous 4-byte copies queued without a synchronize arrive (%d wrong)",
            copies, wrong);
  CUDA_OK(cudaFree(dev));
  CUDA_OK(cudaStreamDestroy(s));
  vt::pass();
}
