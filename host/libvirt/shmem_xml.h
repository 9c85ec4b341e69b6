// The vgpu device in a libvirt domain's XML, built and read with libxml2:
// QEMU's ivshmem-doorbell wired to vgpud's ivshmem server for the VM
// (docs/libvirt.md, docs/kernel-module.md).
//
//   <shmem name='vgpu-VM'>
//     <model type='ivshmem-doorbell'/>
//     <server path='<runtime-dir>/vms/VM.sock'/>
//     <msi vectors='1' ioeventfd='on'/>
//   </shmem>
//
// No <size>: with a server, QEMU takes the region (128 MiB, a power of two)
// from vgpud, and libvirt refuses a size for ivshmem-doorbell. One MSI-X
// vector: vgpud rings the guest on one, and the guest module uses one.
// A device is vgpu's if its name starts with "vgpu-"; nothing else in the
// domain is read or touched.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vgpu/result.h"

namespace vgpu::virt {

inline constexpr std::string_view kDevicePrefix = "vgpu-";
inline constexpr int kMsiVectors = 1;

// One vgpu device found in a domain.
struct VgpuDevice {
  std::string name;         // vgpu-VM
  std::string vm;           // VM
  std::string model;        // ivshmem-doorbell (as attached)
  std::string server_path;  // the socket QEMU connects to
  int vectors = 0;
  std::string xml;  // the element as it is in the domain (libvirt's <address> included)
};

// What vgpu reads from a domain's XML.
struct DomainXml {
  std::string name;
  std::string uuid;
  std::vector<VgpuDevice> devices;
};

// The <shmem> element for VM `vm` served at `server_path`.
std::string device_xml(const std::string& vm, const std::string& server_path);

// Each refuses XML it cannot read, or that is not what it should be (no
// <domain>, not a vgpu device), as an invalid argument saying which.
// Reads a domain's XML (as virDomainGetXMLDesc gives it).
Result parse_domain_xml(std::string_view xml, DomainXml* out);
// Reads one device element (device_xml's output, or a VgpuDevice's xml).
Result parse_device_xml(std::string_view xml, VgpuDevice* out);

// The domain's XML with `device` appended to its <devices>.
Result add_device(std::string_view domain_xml, std::string_view device, std::string* out);
// The domain's XML without its vgpu device named `name`; `removed` counts them.
Result remove_device(std::string_view domain_xml, std::string_view name, std::string* out,
                     int* removed);

}  // namespace vgpu::virt
