// vgpu-smi's output: a table laid out like nvidia-smi's, for the VM's one
// virtual GPU and the student's GPU-time budget, or the same as JSON.
#pragma once

#include <cstdint>
#include <string>

#include "snapshot.h"

namespace vgpu::smi {

// `now` is the guest's clock (unix seconds); times show in its local zone.
std::string format_table(const Snapshot& s, int64_t now, const std::string& version);
std::string format_json(const Snapshot& s);

// "1h 12m", "47m 57s", "12.5s", "850ms", "0s": the two largest units.
std::string format_duration(uint64_t ns);

}  // namespace vgpu::smi
