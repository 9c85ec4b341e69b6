#include "param_layout.h"

namespace vgpu::executor::cuda {

std::string compare_layouts(const fatbin::Kernel& image,
                            const std::vector<wire::ParamSlot>& driver) {
  if (image.params.size() != driver.size()) {
    return std::to_string(image.params.size()) + " parameters in the fat binary, " +
           std::to_string(driver.size()) + " from the driver";
  }
  for (size_t i = 0; i < driver.size(); ++i) {
    const fatbin::Param& p = image.params[i];
    const wire::ParamSlot& d = driver[i];
    if (p.offset != d.offset || p.size != d.size) {
      return "parameter " + std::to_string(i) + ": offset " + std::to_string(p.offset) + " size " +
             std::to_string(p.size) + " in the fat binary, offset " + std::to_string(d.offset) +
             " size " + std::to_string(d.size) + " from the driver";
    }
  }
  return {};
}

}  // namespace vgpu::executor::cuda
