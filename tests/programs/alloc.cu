// alloc MIB COUNT: tries COUNT allocations of MIB MiB each and prints each
// result, then frees what it got and allocates once more (a refused
// cudaMalloc must leave nothing behind). Lines:
//   total_mib <the device memory cudaMemGetInfo reports>
//   malloc <i> <cudaError name>
//   after_free <cudaError name>
// Ends with PASS alloc whatever the results: the caller reads the lines.
#include <cerrno>
#include <cstdlib>
#include <vector>

#include "common.h"

int main(int argc, char** argv) {
  vt::set_name("alloc");
  char* end = nullptr;
  const unsigned long mib = argc == 3 ? std::strtoul(argv[1], &end, 10) : 0;
  const unsigned long count = argc == 3 ? std::strtoul(argv[2], nullptr, 10) : 0;
  if (mib == 0 || count == 0 || count > 1024) vt::fail("usage: alloc MIB COUNT");

  size_t free_bytes = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
  std::printf("total_mib %zu\n", total >> 20);
  std::vector<void*> got;
  for (unsigned long i = 0; i < count; ++i) {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, mib << 20);
    std::printf("malloc %lu %s\n", i + 1, cudaGetErrorName(e));
    if (e == cudaSuccess) got.push_back(p);
  }
  for (void* p : got) CUDA_OK(cudaFree(p));
  void* again = nullptr;
  const cudaError_t e = cudaMalloc(&again, mib << 20);
  std::printf("after_free %s\n", cudaGetErrorName(e));
  if (e == cudaSuccess) CUDA_OK(cudaFree(again));
  vt::pass();
}
