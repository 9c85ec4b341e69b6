// Picks the executor backend from --backend: sim, cuda, or auto (cuda when
// the GPU can be used, sim otherwise, with a log line saying why).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vgpu/executor/backend.h"
#include "vgpu/executor/cuda_backend.h"
#include "vgpu/executor/sim_backend.h"
#include "vgpu/result.h"

namespace vgpu::daemon {

Status choose_backend(const std::string& choice, const executor::SimConfig& sim,
                      const executor::CudaConfig& cuda, std::unique_ptr<executor::Backend>* out,
                      std::string* why);

// The host's GPUs (daemon.h): with the sim backend, `sim_memory_gib.size()`
// of them, the i-th modelling sim_memory_gib[i] GiB; with cuda, the GPUs of
// the ordinals `cuda_devices`, or (empty) every GPU the driver sees. A sim
// memory list longer than one with cuda, or several ordinals with sim, is
// refused.
Status choose_gpus(const std::string& choice, const executor::SimConfig& sim,
                   const std::vector<uint64_t>& sim_memory_gib, const executor::CudaConfig& cuda,
                   const std::vector<int>& cuda_devices,
                   std::vector<std::unique_ptr<executor::Backend>>* out, std::string* why);

// --cuda-device's values: ordinals (each once), or "all" alone (then
// `*ordinals` is empty). Invalid argument, naming the value, otherwise.
Result parse_cuda_devices(const std::vector<std::string>& values, std::vector<int>* ordinals);

}  // namespace vgpu::daemon
