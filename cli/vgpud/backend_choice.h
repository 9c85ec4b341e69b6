// Picks the executor backend from --backend: sim, cuda, or auto (cuda when
// the GPU can be used, sim otherwise, with a log line saying why).
#pragma once

#include <memory>
#include <string>

#include "vgpu/executor/backend.h"
#include "vgpu/executor/cuda_backend.h"
#include "vgpu/executor/sim_backend.h"

namespace vgpu::daemon {

Status choose_backend(const std::string& choice, const executor::SimConfig& sim,
                      const executor::CudaConfig& cuda, std::unique_ptr<executor::Backend>* out,
                      std::string* why);

}  // namespace vgpu::daemon
