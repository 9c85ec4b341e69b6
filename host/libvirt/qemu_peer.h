// Which libvirt domain a QEMU process runs: libvirt starts every QEMU with
// `-uuid UUID`, so the ivshmem socket's peer (SO_PEERCRED) names its domain.
// vgpud uses it to turn away a QEMU of another domain than the one attached
// as the VM (a reused name, a copied definition).
#pragma once

#include <string>

namespace vgpu::virt {

// The lower-case UUID after `-uuid` on process `pid`'s command line; "" if
// there is none (not a QEMU libvirt started, or the process is gone).
std::string qemu_domain_uuid(int pid);

}  // namespace vgpu::virt
