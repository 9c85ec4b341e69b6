// Real VMs vgpud serves from its start. Each gets a region and an endpoint
// under <runtime-dir>/vms/:
//   --vm-socket NAME  NAME.sock, the ivshmem server socket QEMU's
//                     `-chardev socket,path=` (libvirt: <shmem><server path=/>)
//                     connects to; doorbell interrupts both ways
//   --vm-plain NAME   NAME.shm, the region file ivshmem-plain's
//                     memory-backend-file maps; both sides poll
// See docs/kernel-module.md.
#pragma once

#include <string>
#include <vector>

#include "vgpu/protocol/status.h"
#include "vgpu/transport/host_loop.h"

namespace vgpu::daemon {

std::string vm_dir(const std::string& runtime_dir);
transport::VmSpec vm_spec(const std::string& runtime_dir, const std::string& name,
                          transport::VmMode mode);

// Creates <runtime-dir>/vms and serves each VM on `loop` (before or after it
// started). Stops at the first VM it cannot serve, with `why`.
Status serve_vms(transport::HostLoop& loop, const std::vector<transport::VmSpec>& vms,
                 std::string* why);

}  // namespace vgpu::daemon
