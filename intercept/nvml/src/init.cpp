// Starting and stopping the library. nvmlInit asks vgpud for the device once;
// later calls answer from what it said (nvml_state.h).
#include "nvml_api.h"
#include "nvml_state.h"

extern "C" {

nvmlReturn_t nvmlInit_v2(void) noexcept { return vgpu::nvml::init(0); }

nvmlReturn_t nvmlInit(void) noexcept { return vgpu::nvml::init(0); }

// NVML_INIT_FLAG_NO_GPUS is the one flag that changes anything here; the
// others concern attaching physical GPUs, which the host does.
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) noexcept { return vgpu::nvml::init(flags); }

nvmlReturn_t nvmlShutdown(void) noexcept { return vgpu::nvml::shutdown(); }

}  // extern "C"
