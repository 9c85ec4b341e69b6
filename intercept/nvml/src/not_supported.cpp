// What a VM's GPU answers NVML_ERROR_NOT_SUPPORTED to, after the usual
// argument checks (as a physical GPU without the sensor would):
// - sensors, power and clocks: the physical card's, shared by every tenant,
//   so they would tell one VM about the others' load; nor can a VM act on
//   them.
// (Utilization is the tenant's own share: utilization.cpp.)
// NOT_SUPPORTED is an answer NVML programs expect and handle, so no log line.
#include "nvml_api.h"
#include "nvml_state.h"

using vgpu::nvml::check_device;

namespace {

template <class... Out>
nvmlReturn_t not_supported(nvmlDevice_t device, Out*... out) {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (((out == nullptr) || ...)) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_ERROR_NOT_SUPPORTED;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t,
                                      unsigned int* temp) noexcept {
  return not_supported(device, temp);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) noexcept {
  return not_supported(device, power);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int* limit) noexcept {
  return not_supported(device, limit);
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) noexcept {
  return not_supported(device, limit);
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy) noexcept {
  return not_supported(device, energy);
}

nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int* speed) noexcept {
  return not_supported(device, speed);
}

nvmlReturn_t nvmlDeviceGetFanSpeed_v2(nvmlDevice_t device, unsigned int, unsigned int* speed) noexcept {
  return not_supported(device, speed);
}

nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t device, unsigned int* numFans) noexcept {
  return not_supported(device, numFans);
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t, unsigned int* clock) noexcept {
  return not_supported(device, clock);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t, unsigned int* clock) noexcept {
  return not_supported(device, clock);
}

nvmlReturn_t nvmlDeviceGetClock(nvmlDevice_t device, nvmlClockType_t, nvmlClockId_t,
                                unsigned int* clockMHz) noexcept {
  return not_supported(device, clockMHz);
}

}  // extern "C"
