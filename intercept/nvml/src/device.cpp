// Finding the VM's one device and what identifies it: its name and UUID as the
// host reports them, its PCI address as the guest libcuda.so.1 reports it
// (cuDeviceGetPCIBusId), so a program can match NVML's device with CUDA's.
#include <cuda.h>
#include <strings.h>

#include <cstdio>
#include <cstring>

#include "nvml_api.h"
#include "nvml_state.h"

using vgpu::nvml::check_device;
using vgpu::nvml::check_init;
using vgpu::nvml::copy_string;
using vgpu::nvml::DeviceInfo;
using vgpu::nvml::device_handle;

namespace {

constexpr unsigned kNvidiaVendorId = 0x10DE;

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVIDIA prints a GPU's UUID.
void format_uuid(const uint8_t (&u)[16], char (&out)[41]) {
  std::snprintf(out, sizeof out,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                u[14], u[15]);
}

struct PciAddress {
  unsigned domain = 0, bus = 0, device = 0;
};

PciAddress pci_address(const DeviceInfo& d) {
  return {static_cast<unsigned>(d.attribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)),
          static_cast<unsigned>(d.attribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)),
          static_cast<unsigned>(d.attribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID))};
}

// The forms NVML accepts, all hexadecimal: domain:bus:device.function,
// domain:bus:device, bus:device.function (domain 0).
bool parse_pci(const char* s, PciAddress* out) {
  unsigned f = 0;
  int end = 0;
  if (std::sscanf(s, "%x:%x:%x.%x%n", &out->domain, &out->bus, &out->device, &f, &end) == 4 ||
      std::sscanf(s, "%x:%x:%x%n", &out->domain, &out->bus, &out->device, &end) == 3)
    return s[end] == '\0';
  out->domain = 0;
  return std::sscanf(s, "%x:%x.%x%n", &out->bus, &out->device, &f, &end) == 3 && s[end] == '\0';
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) noexcept {
  const DeviceInfo* info = nullptr;
  if (nvmlReturn_t r = check_init(&info); r != NVML_SUCCESS) return r;
  if (!deviceCount) return NVML_ERROR_INVALID_ARGUMENT;
  *deviceCount = info->count;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) noexcept {
  return nvmlDeviceGetCount_v2(deviceCount);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) noexcept {
  const DeviceInfo* info = nullptr;
  if (nvmlReturn_t r = check_init(&info); r != NVML_SUCCESS) return r;
  if (!device || index >= info->count) return NVML_ERROR_INVALID_ARGUMENT;
  *device = device_handle();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) noexcept {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) noexcept {
  const DeviceInfo* info = nullptr;
  if (nvmlReturn_t r = check_init(&info); r != NVML_SUCCESS) return r;
  if (!uuid || !device) return NVML_ERROR_INVALID_ARGUMENT;
  if (info->count == 0) return NVML_ERROR_NOT_FOUND;
  char ours[41];
  format_uuid(info->uuid, ours);
  if (strcasecmp(uuid, ours) != 0) return NVML_ERROR_NOT_FOUND;
  *device = device_handle();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) noexcept {
  const DeviceInfo* info = nullptr;
  if (nvmlReturn_t r = check_init(&info); r != NVML_SUCCESS) return r;
  PciAddress asked;
  if (!pciBusId || !device || !parse_pci(pciBusId, &asked)) return NVML_ERROR_INVALID_ARGUMENT;
  if (info->count == 0) return NVML_ERROR_NOT_FOUND;
  const PciAddress ours = pci_address(*info);
  if (asked.domain != ours.domain || asked.bus != ours.bus || asked.device != ours.device)
    return NVML_ERROR_NOT_FOUND;
  *device = device_handle();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* pciBusId, nvmlDevice_t* device) noexcept {
  return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) noexcept {
  const DeviceInfo* info = nullptr;
  if (nvmlReturn_t r = check_device(device, &info); r != NVML_SUCCESS) return r;
  return copy_string(info->name, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) noexcept {
  const DeviceInfo* info = nullptr;
  if (nvmlReturn_t r = check_device(device, &info); r != NVML_SUCCESS) return r;
  char ours[41];
  format_uuid(info->uuid, ours);
  return copy_string(ours, uuid, length);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) noexcept {
  const DeviceInfo* info = nullptr;
  if (nvmlReturn_t r = check_device(device, &info); r != NVML_SUCCESS) return r;
  if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
  const PciAddress a = pci_address(*info);
  std::memset(pci, 0, sizeof *pci);
  pci->domain = a.domain;
  pci->bus = a.bus;
  pci->device = a.device;
  // The host's device id is not passed on (nor needed to use the GPU): the
  // vendor is NVIDIA's, the device id 0.
  pci->pciDeviceId = kNvidiaVendorId;
  std::snprintf(pci->busId, sizeof pci->busId, NVML_DEVICE_PCI_BUS_ID_FMT, a.domain, a.bus, a.device);
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT,
                a.domain & 0xFFFFu, a.bus, a.device);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) noexcept {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (!index) return NVML_ERROR_INVALID_ARGUMENT;
  *index = 0;
  return NVML_SUCCESS;
}

// /dev/nvidia0 as far as the VM's programs are concerned.
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) noexcept {
  if (nvmlReturn_t r = check_device(device); r != NVML_SUCCESS) return r;
  if (!minorNumber) return NVML_ERROR_INVALID_ARGUMENT;
  *minorNumber = 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) noexcept {
  const DeviceInfo* info = nullptr;
  if (nvmlReturn_t r = check_device(device, &info); r != NVML_SUCCESS) return r;
  if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
  *major = info->attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  *minor = info->attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  return NVML_SUCCESS;
}

}  // extern "C"
