#include "version.h"

#include "vgpu/protocol/handover.h"
#include "vgpu/protocol/region.h"
#include "vgpu/protocol/wire_header.h"

namespace vgpu::cli {

std::string version_line(const std::string& program) {
  return program + " " VGPU_VERSION " (wire protocol " + std::to_string(VGPU_PROTOCOL_VERSION) +
         ", hand-over " + std::to_string(VGPU_HANDOVER_VERSION) + ", region " +
         std::to_string(VGPU_REGION_VERSION) + ")";
}

}  // namespace vgpu::cli
