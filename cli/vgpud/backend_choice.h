// Picks the executor backend from --backend: sim, cuda, or auto (cuda when a
// driver can be loaded, sim otherwise, with a log line saying why).
#pragma once

#include <memory>
#include <string>

#include "vgpu/executor/backend.h"
#include "vgpu/executor/sim_backend.h"

namespace vgpu::daemon {

Status choose_backend(const std::string& choice, const executor::SimConfig& sim,
                      std::unique_ptr<executor::Backend>* out, std::string* why);

}  // namespace vgpu::daemon
