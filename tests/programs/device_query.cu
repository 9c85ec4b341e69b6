// device_query: what the device reports, and that it is plausible.
#include <cstring>

#include "common.h"

int main() {
  vt::set_name("device_query");

  int count = 0;
  CUDA_OK(cudaGetDeviceCount(&count));
  vt::check(count >= 1, "cudaGetDeviceCount = %d (>= 1)", count);
  CUDA_OK(cudaSetDevice(0));
  int dev = -1;
  CUDA_OK(cudaGetDevice(&dev));
  vt::check(dev == 0, "cudaGetDevice = %d after cudaSetDevice(0)", dev);

  cudaDeviceProp prop;
  std::memset(&prop, 0, sizeof prop);
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  vt::check(std::strlen(prop.name) > 0 && std::strlen(prop.name) < sizeof prop.name,
            "name \"%s\"", prop.name);
  vt::check(prop.major >= 1, "compute capability %d.%d", prop.major, prop.minor);
  vt::check(prop.totalGlobalMem > 0, "totalGlobalMem %zu bytes (%.1f GiB)", prop.totalGlobalMem,
            prop.totalGlobalMem / double(1ull << 30));
  vt::check(prop.warpSize == 32, "warpSize %d", prop.warpSize);
  vt::check(prop.multiProcessorCount >= 1, "multiProcessorCount %d", prop.multiProcessorCount);
  vt::check(prop.maxThreadsPerBlock >= 256, "maxThreadsPerBlock %d", prop.maxThreadsPerBlock);

  size_t free_bytes = 0, total_bytes = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
  vt::check(total_bytes > 0 && free_bytes <= total_bytes, "cudaMemGetInfo: %zu free of %zu",
            free_bytes, total_bytes);
  vt::check(total_bytes <= prop.totalGlobalMem, "cudaMemGetInfo total <= totalGlobalMem");

  int driver = 0, runtime = 0;
  CUDA_OK(cudaDriverGetVersion(&driver));
  CUDA_OK(cudaRuntimeGetVersion(&runtime));
  vt::check(runtime >= 13000, "runtime version %d.%d (%d)", runtime / 1000, (runtime % 1000) / 10,
            runtime);
  vt::check(driver >= runtime, "driver version %d.%d (%d) supports the runtime", driver / 1000,
            (driver % 1000) / 10, driver);

  struct {
    cudaDeviceAttr attr;
    const char* name;
    int expected;  // -1: only > 0 is checked
  } attrs[] = {
      {cudaDevAttrWarpSize, "warpSize", 32},
      {cudaDevAttrComputeCapabilityMajor, "computeCapabilityMajor", prop.major},
      {cudaDevAttrComputeCapabilityMinor, "computeCapabilityMinor", prop.minor},
      {cudaDevAttrMultiProcessorCount, "multiProcessorCount", prop.multiProcessorCount},
      {cudaDevAttrMaxThreadsPerBlock, "maxThreadsPerBlock", prop.maxThreadsPerBlock},
      {cudaDevAttrMaxBlockDimX, "maxBlockDimX", prop.maxThreadsDim[0]},
      {cudaDevAttrMaxGridDimX, "maxGridDimX", prop.maxGridSize[0]},
      {cudaDevAttrMaxSharedMemoryPerBlock, "maxSharedMemoryPerBlock", -1},
  };
  for (const auto& a : attrs) {
    int v = -12345;
    CUDA_OK(cudaDeviceGetAttribute(&v, a.attr, 0));
    if (a.expected >= 0)
      vt::check(v == a.expected, "cudaDeviceGetAttribute(%s) = %d (properties say %d)", a.name, v,
                a.expected);
    else
      vt::check(v > 0, "cudaDeviceGetAttribute(%s) = %d", a.name, v);
  }
  vt::pass();
}
