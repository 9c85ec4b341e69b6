// The hash NVIDIA's runtime (CUDA 13) asks the driver for through the private
// table d4082055-..., and verifies: a keyed mix of the driver version, the
// process and thread, the addresses of two of the driver's tables and of the
// hashing function, the time the runtime passed, and each device's UUID and
// PCI location. Computed in the guest from what the guest reports.
// The algorithm is documented by ZLUDA's dark_api notes; this is our own code.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

namespace vgpu::driver {

struct HashedDevice {
  CUuuid uuid;
  int32_t pci_domain;
  int32_t pci_bus;
  int32_t pci_device;
};
static_assert(sizeof(HashedDevice) == 28);

struct IntegrityInput {
  uint32_t version;        // the version the runtime asks about (13000, 13001, 13002)
  uint64_t unix_seconds;   // passed by the runtime
  uint32_t driver_version; // what cuDriverGetVersion reports
  uint32_t process;        // getpid()
  uint32_t thread;         // pthread_self(), low 32 bits
  const void* integrity_table;  // the d4082055 table as handed out
  const void* runtime_table;    // the 6bd5fb6c table as handed out
  const void* hash_function;    // its slot 1
  std::vector<HashedDevice> devices;
};

void integrity_hash(const IntegrityInput& in, uint64_t out[2]);

}  // namespace vgpu::driver
