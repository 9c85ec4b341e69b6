// libvirt's default event loop (virEventRegisterDefaultImpl), run by one
// thread for the whole process: libvirt needs it to deliver domain events,
// notice a closed connection and send keepalives. Registered on first use,
// before the connections that need it are opened; the thread then sleeps in
// poll() until libvirt has something to do, and lives as long as the process.
#pragma once

namespace vgpu::virt {

void ensure_event_loop();

}  // namespace vgpu::virt
