#include "backend_choice.h"

#include <dlfcn.h>
#include <spdlog/spdlog.h>

namespace vgpu::daemon {
namespace {

// Whether the NVIDIA driver library can be loaded on this machine.
bool driver_present(std::string* why) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* err = dlerror();
    *why = err ? err : "libcuda.so.1 not found";
    return false;
  }
  dlclose(h);
  return true;
}

}  // namespace

Status choose_backend(const std::string& choice, const executor::SimConfig& sim,
                      std::unique_ptr<executor::Backend>* out, std::string* why) {
  if (choice == "sim") return executor::make_sim_backend(sim, out);
  if (choice == "cuda" || choice == "auto") {
    std::string reason;
    if (!driver_present(&reason)) {
      if (choice == "cuda") {
        *why = "--backend cuda: no NVIDIA driver here (" + reason + ")";
        return Status::kNoDevice;
      }
      spdlog::info("vgpud: --backend auto: no NVIDIA driver ({}), using the sim backend", reason);
      return executor::make_sim_backend(sim, out);
    }
    // The driver-API backend is not part of this build yet.
    if (choice == "cuda") {
      *why = "--backend cuda: the CUDA backend is not available in this build";
      return Status::kNotSupported;
    }
    spdlog::warn("vgpud: --backend auto: a driver is present but this build has no CUDA "
                 "backend yet; using the sim backend");
    return executor::make_sim_backend(sim, out);
  }
  *why = "--backend must be sim, cuda or auto, not '" + choice + "'";
  return Status::kInvalidValue;
}

}  // namespace vgpu::daemon
