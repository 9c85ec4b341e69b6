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

#include "vgpu/host/libvirt_control.h"
#include "vgpu/result.h"
#include "vgpu/scheduler/dispatcher_group.h"
#include "vgpu/transport/host_loop.h"

namespace vgpu::host {

std::string vm_dir(const std::string& runtime_dir);
transport::VmSpec vm_spec(const std::string& runtime_dir, const std::string& name,
                          transport::VmMode mode);

// Creates <runtime-dir>/vms and serves each VM on `loop` (before or after it
// started). Stops at the first VM it cannot serve, its message naming the
// VM. `gid` >= 0: the sockets belong to that group (QEMU's, docs/libvirt.md),
// mode 0660.
Result serve_vms(transport::HostLoop& loop, const std::vector<transport::VmSpec>& vms,
                 int gid = -1);

// What the libvirt control asks of the daemon (libvirt_control.h): VMs served
// on `loop` as ivshmem-doorbell sockets under `runtime_dir`, their channels,
// and the GPU time the dispatcher measured.
VmHooks vm_hooks(transport::HostLoop* loop, scheduler::DispatcherGroup* dispatcher,
                 const std::string& runtime_dir, int gid);

}  // namespace vgpu::host
