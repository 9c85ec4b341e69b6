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

Status choose_gpus(const std::string& choice, const executor::SimConfig& sim,
                   const std::vector<uint64_t>& sim_memory_gib, const executor::CudaConfig& cuda,
                   std::vector<std::unique_ptr<executor::Backend>>* out, std::string* why) {
  std::unique_ptr<executor::Backend> first;
  executor::SimConfig one = sim;
  one.device_memory = sim_memory_gib.at(0) * executor::kGiB;
  if (const Status st = choose_backend(choice, one, cuda, &first, why); !ok(st)) return st;
  const bool is_sim = first->name() == "sim";
  out->push_back(std::move(first));
  if (sim_memory_gib.size() == 1) return Status::kSuccess;
  if (!is_sim) {
    *why = "--sim-devices and a list of --sim-memory-gib apply to the sim backend only";
    out->clear();
    return Status::kInvalidValue;
  }
  for (size_t i = 1; i < sim_memory_gib.size(); ++i) {
    one.device_memory = sim_memory_gib[i] * executor::kGiB;
    one.device_index = static_cast<uint32_t>(i);
    std::unique_ptr<executor::Backend> next;
    if (const Status st = executor::make_sim_backend(one, &next); !ok(st)) {
      *why = "sim GPU " + std::to_string(i) + " cannot start (see above)";
      out->clear();
      return st;
    }
    out->push_back(std::move(next));
  }
  return Status::kSuccess;
}

}  // namespace vgpu::daemon
