// error_paths: errors CUDA reports for bad calls, and that each one leaves the
// device usable.
//   1. cudaFree twice                       -> cudaErrorInvalidValue
//   2. cudaMemcpy past an allocation's end  -> cudaErrorInvalidValue (nothing written)
//   3. cudaLaunchKernel on a host function  -> cudaErrorInvalidDeviceFunction
//   4. a block larger than the kernel's __launch_bounds__
//                                           -> cudaErrorLaunchOutOfResources
//                                              from the launch or the next sync
//      (cudaFuncGetAttributes reports the bound as maxThreadsPerBlock)
//   5. with --sim: a kernel the sim plug-in deliberately lacks (not_in_plugin)
//                                           -> cudaErrorInvalidDeviceFunction
//                                              from the launch or the next sync
// After each: cudaPeekAtLastError reports the error without clearing it (also
// after later successful calls), cudaGetLastError reports it once and then
// cudaSuccess, and a kernel + copy give correct results. Finally
// cudaDeviceReset, and the device works again.
#include <cstring>
#include <vector>

#include "common.h"

__global__ void fill(int* p, int value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = value;
}

// A real, valid kernel with no CPU implementation in the sim plug-in (on
// purpose: the sim backend must refuse it cleanly). Never add one. The
// program is built without PTX (tests/programs/CMakeLists.txt), so the sim's
// interpreter cannot run it either.
__global__ void not_in_plugin(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = -i;
}

// At most 64 threads a block: a launch of 128 must be refused, not run.
__global__ void __launch_bounds__(64) bounded(int* p) { p[threadIdx.x] = 1; }

// An ordinary host function: not a registered kernel.
void host_function(int* p, int value, int n) {
  for (int i = 0; i < n; ++i) p[i] = value;
}

static void device_works(const char* after) {
  static int round = 0;
  const int n = 3000, value = 0x1000 + ++round;
  int* d = nullptr;
  CUDA_OK(cudaMalloc(&d, n * sizeof(int)));
  fill<<<(n + 255) / 256, 256>>>(d, value, n);
  LAUNCH_OK();
  std::vector<int> h(n);
  CUDA_OK(cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
  CUDA_OK(cudaFree(d));
  for (int i = 0; i < n; ++i)
    if (h[i] != value) vt::fail("after %s: fill gave p[%d] = %d, expected %d", after, i, h[i], value);
  vt::check(cudaPeekAtLastError() == cudaSuccess,
            "device works after %s (kernel + copy correct, no error pending)", after);
}

// The last error is `expected`: peek twice (no reset), get (reset), get again.
static void expect_last_error(cudaError_t expected, const char* after) {
  cudaError_t p1 = cudaPeekAtLastError();
  cudaError_t p2 = cudaPeekAtLastError();
  cudaError_t g1 = cudaGetLastError();
  cudaError_t g2 = cudaGetLastError();
  if (p1 != expected || p2 != expected)
    vt::fail("after %s: cudaPeekAtLastError returned %s then %s, expected %s both times", after,
             cudaGetErrorName(p1), cudaGetErrorName(p2), cudaGetErrorName(expected));
  if (g1 != expected || g2 != cudaSuccess)
    vt::fail("after %s: cudaGetLastError returned %s then %s, expected %s then cudaSuccess",
             after, cudaGetErrorName(g1), cudaGetErrorName(g2), cudaGetErrorName(expected));
  vt::check(true, "after %s: cudaPeekAtLastError %s twice, cudaGetLastError %s then cudaSuccess",
            after, cudaGetErrorName(expected), cudaGetErrorName(expected));
}

static void expect(cudaError_t got, cudaError_t expected, const char* what) {
  if (got != expected)
    vt::fail("%s returned %s, expected %s", what, vt::err_text(got), cudaGetErrorName(expected));
  vt::check(true, "%s -> %s", what, cudaGetErrorName(got));
}

int main(int argc, char** argv) {
  vt::set_name("error_paths");
  const bool sim = argc > 1 && std::strcmp(argv[1], "--sim") == 0;

  vt::check(std::strcmp(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue") == 0,
            "cudaGetErrorName(cudaErrorInvalidValue)");
  vt::check(std::strcmp(cudaGetErrorName(cudaErrorInvalidDeviceFunction),
                        "cudaErrorInvalidDeviceFunction") == 0,
            "cudaGetErrorName(cudaErrorInvalidDeviceFunction)");
  vt::check(std::strlen(cudaGetErrorString(cudaErrorInvalidValue)) > 0,
            "cudaGetErrorString(cudaErrorInvalidValue) = \"%s\"",
            cudaGetErrorString(cudaErrorInvalidValue));
  vt::check(cudaGetLastError() == cudaSuccess, "no error pending at start");
  device_works("start");

  // 1. Double free.
  {
    int* d = nullptr;
    CUDA_OK(cudaMalloc(&d, 1024));
    CUDA_OK(cudaFree(d));
    expect(cudaFree(d), cudaErrorInvalidValue, "second cudaFree of the same pointer");
    CUDA_OK(cudaDeviceSynchronize());  // a successful call does not clear the last error
    expect_last_error(cudaErrorInvalidValue, "double free");
    device_works("double free");
  }

  // 2. Copies past the end of an allocation.
  {
    const size_t size = 4096;
    unsigned char* d = nullptr;
    unsigned char* other = nullptr;
    CUDA_OK(cudaMalloc(&d, size));
    CUDA_OK(cudaMalloc(&other, 4 * size));
    CUDA_OK(cudaMemset(d, 0x11, size));
    std::vector<unsigned char> host(2 * size, 0x22);
    expect(cudaMemcpy(host.data(), d, 2 * size, cudaMemcpyDeviceToHost), cudaErrorInvalidValue,
           "cudaMemcpy D2H of 8192 bytes from a 4096-byte allocation");
    expect(cudaMemcpy(host.data(), d + 4000, 200, cudaMemcpyDeviceToHost), cudaErrorInvalidValue,
           "cudaMemcpy D2H of 200 bytes at offset 4000 of 4096");
    expect(cudaMemcpy(d, host.data(), 2 * size, cudaMemcpyHostToDevice), cudaErrorInvalidValue,
           "cudaMemcpy H2D of 8192 bytes into a 4096-byte allocation");
    expect(cudaMemcpy(other, d, 2 * size, cudaMemcpyDeviceToDevice), cudaErrorInvalidValue,
           "cudaMemcpy D2D of 8192 bytes from a 4096-byte allocation");
    expect_last_error(cudaErrorInvalidValue, "copies past the end");
    std::vector<unsigned char> back(size, 0);
    CUDA_OK(cudaMemcpy(back.data(), d, size, cudaMemcpyDeviceToHost));
    bool intact = true;
    for (unsigned char b : back) intact = intact && b == 0x11;
    vt::check(intact, "the failed H2D copy wrote nothing into the allocation");
    CUDA_OK(cudaFree(d));
    CUDA_OK(cudaFree(other));
    device_works("copies past the end");
  }

  // 3. cudaLaunchKernel with a host function that is not a kernel. A shim
  // runtime that keeps the registrations refuses the function; CUDA 13's own
  // runtime hands an unregistered pointer to the driver as a kernel handle,
  // which the driver refuses as an invalid handle. Either way: refused.
  {
    int* d = nullptr;
    int value = 7, n = 16;
    CUDA_OK(cudaMalloc(&d, n * sizeof(int)));
    void* args[] = {&d, &value, &n};
    const cudaError_t got = cudaLaunchKernel(reinterpret_cast<const void*>(host_function), dim3(1),
                                             dim3(16), args, 0, nullptr);
    const cudaError_t refused =
        got == cudaErrorInvalidResourceHandle ? got : cudaErrorInvalidDeviceFunction;
    expect(got, refused, "cudaLaunchKernel(host_function)");
    expect_last_error(refused, "launching a host function");
    CUDA_OK(cudaFree(d));
    device_works("launching a host function");
  }

  // 4. More threads than the kernel's __launch_bounds__ allow. No sticky
  // error: the device goes on working.
  {
    cudaFuncAttributes attr{};
    CUDA_OK(cudaFuncGetAttributes(&attr, bounded));
    if (attr.maxThreadsPerBlock != 64)
      vt::fail("cudaFuncGetAttributes(bounded).maxThreadsPerBlock = %d, expected 64 (__launch_bounds__)",
               attr.maxThreadsPerBlock);
    vt::check(true, "cudaFuncGetAttributes(bounded).maxThreadsPerBlock = 64");
    int* d = nullptr;
    CUDA_OK(cudaMalloc(&d, 128 * sizeof(int)));
    CUDA_OK(cudaMemset(d, 0, 128 * sizeof(int)));
    bounded<<<1, 128>>>(d);
    const cudaError_t at_launch = cudaPeekAtLastError();
    const cudaError_t at_sync = cudaDeviceSynchronize();
    const cudaError_t want = cudaErrorLaunchOutOfResources;
    if (!((at_launch == want && (at_sync == cudaSuccess || at_sync == want)) ||
          (at_launch == cudaSuccess && at_sync == want)))
      vt::fail("bounded<<<1, 128>>>: launch returned %s and synchronize %s; expected %s from one of them",
               cudaGetErrorName(at_launch), cudaGetErrorName(at_sync), cudaGetErrorName(want));
    vt::check(true, "bounded<<<1, 128>>> past __launch_bounds__(64) -> %s", cudaGetErrorName(want));
    expect_last_error(want, "a block past __launch_bounds__");
    int h[128];
    CUDA_OK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    bool untouched = true;
    for (int v : h) untouched = untouched && v == 0;
    vt::check(untouched, "the refused launch wrote nothing");
    CUDA_OK(cudaFree(d));
    device_works("a block past __launch_bounds__");
  }

  // 5. A registered kernel the sim backend has no implementation for.
  if (sim) {
    int* d = nullptr;
    const int n = 64;
    CUDA_OK(cudaMalloc(&d, n * sizeof(int)));
    not_in_plugin<<<1, n>>>(d, n);
    cudaError_t at_launch = cudaPeekAtLastError();
    cudaError_t at_sync = cudaDeviceSynchronize();
    std::printf("info not_in_plugin: launch -> %s, synchronize -> %s\n", cudaGetErrorName(at_launch),
                cudaGetErrorName(at_sync));
    // The shim runtime says the function is invalid; NVIDIA's runtime over
    // vgpu's driver, that no kernel image is available for the device.
    const cudaError_t want = at_launch == cudaErrorNoKernelImageForDevice ||
                                     at_sync == cudaErrorNoKernelImageForDevice
                                 ? cudaErrorNoKernelImageForDevice
                                 : cudaErrorInvalidDeviceFunction;
    bool ok = (at_launch == want && (at_sync == cudaSuccess || at_sync == want)) ||
              (at_launch == cudaSuccess && at_sync == want);
    if (!ok)
      vt::fail("not_in_plugin: launch returned %s and synchronize %s; expected %s from one of them",
               cudaGetErrorName(at_launch), cudaGetErrorName(at_sync), cudaGetErrorName(want));
    vt::check(true, "launching not_in_plugin under sim -> %s", cudaGetErrorName(want));
    expect_last_error(want, "a kernel missing from the plug-in");
    CUDA_OK(cudaFree(d));
    device_works("a kernel missing from the plug-in");
  } else {
    std::printf("skip not_in_plugin launch (run with --sim under the sim backend)\n");
  }

  // cudaDeviceReset destroys the context; the next call creates a new one.
  CUDA_OK(cudaDeviceReset());
  device_works("cudaDeviceReset");
  vt::check(cudaGetLastError() == cudaSuccess, "no error pending at the end");
  vt::pass();
}
