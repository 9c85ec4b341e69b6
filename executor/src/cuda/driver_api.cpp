#include "driver_api.h"

#include <dlfcn.h>

#include <algorithm>

namespace vgpu::executor::cuda {
namespace {

#define VGPU_CUDA_STR2(x) #x
#define VGPU_CUDA_STR(x) VGPU_CUDA_STR2(x)  // expands first: the ABI name

template <class Fn>
Fn symbol(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

}  // namespace

LoadError load_driver(const std::string& library, DriverApi* api, std::string* why) {
  *api = DriverApi{};
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    *why = err ? err : library + ": cannot be opened";
    return LoadError::kNoLibrary;
  }
  // The version first: it decides which ABI each name resolves to.
  const auto get_version = symbol<decltype(&::cuDriverGetVersion)>(lib, "cuDriverGetVersion");
  int version = 0;
  if (!get_version || get_version(&version) != CUDA_SUCCESS) {
    *why = library + " has no usable cuDriverGetVersion: not an NVIDIA driver library";
    return LoadError::kNoEntryPoint;
  }
  if (version < kMinDriverVersion) {
    *why = "the NVIDIA driver supports CUDA " + std::to_string(version / 1000) + "." +
           std::to_string(version % 1000 / 10) + "; the cuda backend needs 12.4 or newer";
    return LoadError::kDriverTooOld;
  }
  // Ask for the ABI of the headers we were built with, or of the driver if it
  // is older (the entry points used have the same signatures since 12.4).
  const int want = std::min(version, CUDA_VERSION);
  const auto get_proc = symbol<decltype(&::cuGetProcAddress)>(lib, "cuGetProcAddress_v2");

  DriverApi loaded;
  std::string missing;
  auto find = [&](const char* base, const char* abi) -> void* {
    void* p = nullptr;
    if (get_proc) {
      CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      if (get_proc(base, &p, want, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
          found != CU_GET_PROC_ADDRESS_SUCCESS) {
        p = nullptr;
      }
      return p;
    }
    return dlsym(lib, abi);  // a driver without cuGetProcAddress: exact ABI names
  };
#define VGPU_CUDA_RESOLVE(name, required)                                          \
  if (void* p = find(#name, VGPU_CUDA_STR(name))) {                                \
    loaded.name = reinterpret_cast<decltype(loaded.name)>(p);                      \
  } else if (required && missing.empty()) {                                        \
    missing = #name;                                                               \
  }
  VGPU_CUDA_DRIVER_FUNCTIONS(VGPU_CUDA_RESOLVE)
#undef VGPU_CUDA_RESOLVE
  if (!missing.empty()) {
    *why = library + " (CUDA " + std::to_string(version) + ") has no entry point " + missing;
    return LoadError::kNoEntryPoint;
  }
  *api = loaded;
  return LoadError::kNone;
}

std::string error_name(const DriverApi& api, CUresult r) {
  const char* s = nullptr;
  if (api.cuGetErrorName && api.cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  return "CUresult " + std::to_string(static_cast<int>(r));
}

}  // namespace vgpu::executor::cuda
