// What accept() can tell about a launch before the driver sees it, from the
// limits the device reported (so a bad grid is refused when it is queued, as
// the runtime does, not when it runs).
#pragma once

#include <cstdint>

#include "vgpu/executor/backend.h"

namespace vgpu::executor::cuda {

// kInvalidConfiguration for a zero or oversized grid or block, kInvalidValue
// for more dynamic shared memory than a block can have. A limit the device
// did not report (0) is not checked.
Status check_launch(const DeviceInfo& device, const uint32_t grid[3], const uint32_t block[3],
                    uint32_t shared_mem);

}  // namespace vgpu::executor::cuda
