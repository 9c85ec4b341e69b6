#include "backend_choice.h"

#include <spdlog/spdlog.h>

namespace vgpu::daemon {

Status choose_backend(const std::string& choice, const executor::SimConfig& sim,
                      const executor::CudaConfig& cuda, std::unique_ptr<executor::Backend>* out,
                      std::string* why) {
  if (choice == "sim") return executor::make_sim_backend(sim, out);
  if (choice == "cuda" || choice == "auto") {
    // The probe runs in a worker process: the daemon itself never loads the
    // driver, so a machine without one (CI) starts it all the same.
    std::string reason;
    const Status st = executor::make_cuda_backend(cuda, out, &reason);
    if (ok(st)) return st;
    if (choice == "cuda") {
      *why = "--backend cuda: " + reason;
      return st;
    }
    spdlog::info("vgpud: --backend auto: the GPU cannot be used ({}); using the sim backend",
                 reason);
    return executor::make_sim_backend(sim, out);
  }
  *why = "--backend must be sim, cuda or auto, not '" + choice + "'";
  return Status::kInvalidValue;
}

}  // namespace vgpu::daemon
