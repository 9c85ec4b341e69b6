// What the daemon reports as the device: read once, by a probe worker, from
// the driver (name, UUID, memory, driver version, every device attribute).
#pragma once

#include <string>

#include "driver_api.h"
#include "worker_protocol.h"

namespace vgpu::executor::cuda {

// cuInit has run. Attributes the driver does not know read as 0.
CUresult query_device(const DriverApi& api, int device_ordinal, wire::DeviceReport* out,
                      std::string* why);

}  // namespace vgpu::executor::cuda
