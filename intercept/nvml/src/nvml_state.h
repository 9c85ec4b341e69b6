// What the library keeps between calls: whether nvmlInit holds, and the one
// device a VM sees as the host described it (asked once: its name, UUID and
// attributes do not change while the process runs; its memory does, and is
// asked each time).
#pragma once

#include <cstdint>
#include <string_view>

#include "nvml_types.h"
#include "vgpu/protocol/status.h"

namespace vgpu::nvml {

struct DeviceInfo {
  unsigned count = 0;  // 1: one virtual GPU per VM (0 only with NVML_INIT_FLAG_NO_GPUS)
  char name[256] = {};
  uint8_t uuid[16] = {};
  int32_t attributes[160] = {};  // indexed by CUdevice_attribute
  int attribute(int a) const { return a >= 0 && a < 160 ? attributes[a] : 0; }
};

// nvmlInit*: connects to vgpud and fetches the device on first use; counted,
// as NVIDIA's are. NVML_ERROR_DRIVER_NOT_LOADED when vgpud cannot be reached.
nvmlReturn_t init(unsigned flags);
nvmlReturn_t shutdown();

// NVML_ERROR_UNINITIALIZED unless nvmlInit holds; else the device.
nvmlReturn_t check_init(const DeviceInfo** out = nullptr);
// check_init, and `handle` must be the one handle this library hands out
// (NVML_ERROR_INVALID_ARGUMENT for anything else).
nvmlReturn_t check_device(nvmlDevice_t handle, const DeviceInfo** out = nullptr);
nvmlDevice_t device_handle();

// The NVML code for a status of the wire (after init succeeded).
nvmlReturn_t to_nvml(Status s);

// Copies `s` and its NUL into out[0, length): NVML_ERROR_INSUFFICIENT_SIZE,
// nothing written, when it does not fit.
nvmlReturn_t copy_string(std::string_view s, char* out, unsigned length);

}  // namespace vgpu::nvml
