// cub_tuning: CUB (under thrust) tunes itself by the code the device runs: it
// asks cudaFuncGetAttributes for a kernel's PTX version and picks the policy
// compiled for that architecture; a version the program was not built for
// makes every algorithm fail with cudaErrorInvalidDeviceFunction. Built for
// sm_75 with its PTX (as a lab builds for its Turing GPUs), so a newer device
// runs the compute_75 PTX: ptxVersion 75, binaryVersion the device's own.
#include <cub/cub.cuh>

#include "common.h"

__global__ void probe(int* out) { out[threadIdx.x] = threadIdx.x; }

int main() {
  vt::set_name("cub_tuning");
  int major = 0, minor = 0;
  CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  CUDA_OK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
  const int cc = major * 10 + minor;
  cudaFuncAttributes a{};
  CUDA_OK(cudaFuncGetAttributes(&a, probe));
  // A Turing device runs the sm_75 cubin; any newer one compiles the PTX.
  vt::check(a.ptxVersion == 75 && a.binaryVersion == (major == 7 ? 75 : cc),
            "a kernel built for sm_75 reports ptxVersion %d, binaryVersion %d on a %d.%d device",
            a.ptxVersion, a.binaryVersion, major, minor);
  int ptx = 0;
  CUDA_OK(cub::PtxVersion(ptx));
  vt::check(ptx == 750, "CUB's PtxVersion is %d", ptx);

  const int n = 1 << 16;
  int *in = nullptr, *out = nullptr;
  CUDA_OK(cudaMalloc(&in, n * sizeof(int)));
  CUDA_OK(cudaMalloc(&out, n * sizeof(int)));
  size_t sort_bytes = 0, sum_bytes = 0, scan_bytes = 0;
  CUDA_OK(cub::DeviceRadixSort::SortKeys(nullptr, sort_bytes, in, out, n));
  CUDA_OK(cub::DeviceReduce::Sum(nullptr, sum_bytes, in, out, n));
  CUDA_OK(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, in, out, n));
  vt::check(sort_bytes > 0 && sum_bytes > 0 && scan_bytes > 0,
            "CUB plans a radix sort, a reduction and a scan (%zu, %zu, %zu bytes of temporary storage)",
            sort_bytes, sum_bytes, scan_bytes);
  // The program's own kernel, built the same way, runs.
  probe<<<1, 32>>>(out);
  LAUNCH_OK();
  int got[32] = {};
  CUDA_OK(cudaMemcpy(got, out, sizeof got, cudaMemcpyDeviceToHost));
  vt::check(got[0] == 0 && got[31] == 31, "a kernel built for sm_75 runs (%d %d)", got[0], got[31]);
  CUDA_OK(cudaFree(in));
  CUDA_OK(cudaFree(out));
  vt::pass();
}
