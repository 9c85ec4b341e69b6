// Every function libnvidia-ml.so.1 exports, with NVIDIA's signatures (the
// version script exports nvml* and this library defines nothing else under
// that prefix). A function not declared here is not exported at all: a
// program that dlsyms it gets NULL and one linked against it fails with
// "undefined symbol: nvmlXxx", naming it, rather than running on a stub that
// pretends. noexcept: no exception leaves through the C ABI.
#pragma once

#include "nvml_types.h"

extern "C" {

// --- init.cpp
nvmlReturn_t nvmlInit_v2(void) noexcept;
nvmlReturn_t nvmlInit(void) noexcept;  // NVML 4's name; same behaviour here
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) noexcept;
nvmlReturn_t nvmlShutdown(void) noexcept;

// --- errors.cpp
const char* nvmlErrorString(nvmlReturn_t result) noexcept;

// --- system.cpp
nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) noexcept;
nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) noexcept;
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) noexcept;
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) noexcept;

// --- device.cpp: finding the device and what identifies it
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) noexcept;
nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) noexcept;
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) noexcept;
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) noexcept;
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) noexcept;
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) noexcept;
nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* pciBusId, nvmlDevice_t* device) noexcept;
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) noexcept;
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) noexcept;
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) noexcept;
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) noexcept;
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) noexcept;
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) noexcept;

// --- memory.cpp: the tenant's memory and the processes using it
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) noexcept;
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) noexcept;
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) noexcept;
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v2_t* infos) noexcept;
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                  nvmlProcessInfo_v1_t* infos) noexcept;

// --- not_supported.cpp: what a VM's GPU does not have or must not reveal
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) noexcept;
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int* temp) noexcept;
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) noexcept;
nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int* limit) noexcept;
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) noexcept;
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy) noexcept;
nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int* speed) noexcept;
nvmlReturn_t nvmlDeviceGetFanSpeed_v2(nvmlDevice_t device, unsigned int fan, unsigned int* speed) noexcept;
nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t device, unsigned int* numFans) noexcept;
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) noexcept;
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) noexcept;
nvmlReturn_t nvmlDeviceGetClock(nvmlDevice_t device, nvmlClockType_t clockType, nvmlClockId_t clockId,
                                unsigned int* clockMHz) noexcept;

}  // extern "C"
