// The guest libcuda.so.1's entry points, without a daemon: cuGetProcAddress
// hands out each name's form for the version asked, the exports cover the
// toolkit's, and calls before a connection fail the way CUDA's do.
#include <dlfcn.h>

#include <cuda.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

namespace {

void* library() {
  static void* handle = [] {
    unsetenv("VGPU_VM");  // no simulated VM: nothing to connect to
    void* h = dlopen(VGPU_GUEST_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
    if (!h) FAIL("dlopen: " << dlerror());
    return h;
  }();
  return handle;
}

template <class F>
F fn(const char* name) {
  void* p = dlsym(library(), name);
  REQUIRE(p != nullptr);
  return reinterpret_cast<F>(p);
}

using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

void* proc(const char* name, int version, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT,
           CUresult* result = nullptr, CUdriverProcAddressQueryResult* status = nullptr) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult s{};
  const CUresult r = fn<GetProc>("cuGetProcAddress_v2")(name, &p, version, flags, &s);
  if (result) *result = r;
  if (status) *status = s;
  return p;
}

}  // namespace

TEST_CASE("cuGetProcAddress gives each version's own symbol", "[driver]") {
  CHECK(proc("cuMemAlloc", 2000) == dlsym(library(), "cuMemAlloc"));
  CHECK(proc("cuMemAlloc", 3020) == dlsym(library(), "cuMemAlloc_v2"));
  CHECK(proc("cuMemAlloc", 13000) == dlsym(library(), "cuMemAlloc_v2"));
  CHECK(proc("cuCtxCreate", 12050) == dlsym(library(), "cuCtxCreate_v4"));
  CHECK(proc("cuCtxCreate", 11040) == dlsym(library(), "cuCtxCreate_v3"));
  CHECK(proc("cuEventElapsedTime", 13000) == dlsym(library(), "cuEventElapsedTime_v2"));
  // The per-thread default-stream forms when asked for them.
  CHECK(proc("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ==
        dlsym(library(), "cuMemcpyHtoD_v2_ptds"));
  CHECK(proc("cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ==
        dlsym(library(), "cuLaunchKernel_ptsz"));
  CHECK(proc("cuLaunchKernel", 13000) == dlsym(library(), "cuLaunchKernel"));
  CHECK(proc("cuProfilerStart", 13000) == dlsym(library(), "cuProfilerStart"));
}

TEST_CASE("cuGetProcAddress says why a name is not given", "[driver]") {
  CUresult r{};
  CUdriverProcAddressQueryResult s{};
  CHECK(proc("cuNoSuchCall", 13000, 0, &r, &s) == nullptr);
  CHECK(r == CUDA_ERROR_NOT_FOUND);
  CHECK(s == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  CHECK(proc("cuLaunchKernelEx", 11000, 0, &r, &s) == nullptr);  // introduced in 11.8
  CHECK(r == CUDA_ERROR_NOT_FOUND);
  CHECK(s == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  CHECK(proc("", 0, 0, &r, &s) == nullptr);
}

TEST_CASE("a refused call says so; error names come from cuda.h", "[driver]") {
  using NoArgs = CUresult (*)();
  // cuIpcGetMemHandle is not forwarded: its generated stub refuses it by name.
  CHECK(fn<NoArgs>("cuIpcGetMemHandle")() == CUDA_ERROR_NOT_SUPPORTED);
  const char* name = nullptr;
  const char* text = nullptr;
  using ErrorName = CUresult (*)(CUresult, const char**);
  CHECK(fn<ErrorName>("cuGetErrorName")(CUDA_ERROR_NO_BINARY_FOR_GPU, &name) == CUDA_SUCCESS);
  CHECK(std::string(name) == "CUDA_ERROR_NO_BINARY_FOR_GPU");
  CHECK(fn<ErrorName>("cuGetErrorString")(CUDA_ERROR_INVALID_VALUE, &text) == CUDA_SUCCESS);
  CHECK(std::string(text).find("not within an acceptable range") != std::string::npos);
  CHECK(fn<ErrorName>("cuGetErrorName")(static_cast<CUresult>(998), &name) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("without a daemon the driver looks like a machine without a GPU", "[driver]") {
  using Init = CUresult (*)(unsigned);
  using Count = CUresult (*)(int*);
  using Version = CUresult (*)(int*);
  int version = 0;
  CHECK(fn<Version>("cuDriverGetVersion")(&version) == CUDA_SUCCESS);
  CHECK(version == CUDA_VERSION);
  CHECK(fn<Init>("cuInit")(0) == CUDA_ERROR_NO_DEVICE);
  int count = -1;
  CHECK(fn<Count>("cuDeviceGetCount")(&count) == CUDA_ERROR_NOT_INITIALIZED);
  using Alloc = CUresult (*)(CUdeviceptr*, size_t);
  CUdeviceptr p = 0;
  CHECK(fn<Alloc>("cuMemAlloc_v2")(&p, 16) == CUDA_ERROR_NOT_INITIALIZED);
}
