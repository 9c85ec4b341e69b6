// hold MIB: allocates MIB MiB of device memory, prints "holding", then keeps
// calling into vgpu (memsets and synchronizes, no kernels) until it is
// killed: a guest process that dies mid-call with memory on the host.
#include <cstdlib>

#include "common.h"

int main(int argc, char** argv) {
  vt::set_name("hold");
  const unsigned long mib = argc == 2 ? std::strtoul(argv[1], nullptr, 10) : 0;
  if (mib == 0 || mib > 4096) vt::fail("usage: hold MIB");
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, mib << 20));
  std::printf("holding %lu MiB\n", mib);
  for (unsigned i = 0;; ++i) {
    CUDA_OK(cudaMemset(p, static_cast<int>(i & 0xff), mib << 20));
    CUDA_OK(cudaDeviceSynchronize());
  }
}
