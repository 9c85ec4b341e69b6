// Loading the driver table: dlopen, cuGetProcAddress_v2, typed entry points,
// and a clear reason when something is missing. The "driver" is the FAKE
// library (fake_driver/fake_libcuda.cpp).
#include <catch2/catch.hpp>

#include "cuda_test_support.h"
#include "driver_api.h"

using namespace vgpu::executor::cuda;
using vgpu::test::ScopedEnv;

TEST_CASE("cuda driver table: every entry point, typed, from cuGetProcAddress") {
  DriverApi api;
  std::string why;
  REQUIRE(load_driver(VGPU_FAKE_LIBCUDA, &api, &why) == LoadError::kNone);
#define CHECK_LOADED(name, required) CHECK(api.name != nullptr);
  VGPU_CUDA_DRIVER_FUNCTIONS(CHECK_LOADED)
#undef CHECK_LOADED
  int version = 0;
  REQUIRE(api.cuDriverGetVersion(&version) == CUDA_SUCCESS);
  CHECK(version == 13000);
  CHECK(error_name(api, CUDA_ERROR_ILLEGAL_ADDRESS) == "CUDA_ERROR_ILLEGAL_ADDRESS");
  CHECK(error_name(api, static_cast<CUresult>(1001)) == "CUresult 1001");
}

TEST_CASE("cuda driver table: no library, a missing entry point, an old driver") {
  DriverApi api;
  std::string why;
  CHECK(load_driver("/nonexistent/libcuda.so.1", &api, &why) == LoadError::kNoLibrary);
  CHECK(why.find("/nonexistent/libcuda.so.1") != std::string::npos);
  CHECK(api.cuInit == nullptr);
  {
    ScopedEnv missing("VGPU_FAKE_CUDA_MISSING", "cuLaunchKernel");
    CHECK(load_driver(VGPU_FAKE_LIBCUDA, &api, &why) == LoadError::kNoEntryPoint);
    CHECK(why.find("has no entry point cuLaunchKernel") != std::string::npos);
    CHECK(api.cuInit == nullptr);  // nothing half-filled
  }
  {
    // Optional: a driver without cuFuncGetParamInfo still loads.
    ScopedEnv missing("VGPU_FAKE_CUDA_MISSING", "cuFuncGetParamInfo");
    CHECK(load_driver(VGPU_FAKE_LIBCUDA, &api, &why) == LoadError::kNone);
    CHECK(api.cuFuncGetParamInfo == nullptr);
    CHECK(api.cuLaunchKernel != nullptr);
  }
  {
    ScopedEnv old("VGPU_FAKE_CUDA_DRIVER_VERSION", "12020");
    CHECK(load_driver(VGPU_FAKE_LIBCUDA, &api, &why) == LoadError::kDriverTooOld);
    CHECK(why == "the NVIDIA driver supports CUDA 12.2; the cuda backend needs 12.4 or newer");
  }
  CHECK(load_driver("libc.so.6", &api, &why) == LoadError::kNoEntryPoint);
  CHECK(why.find("not an NVIDIA driver library") != std::string::npos);
}
