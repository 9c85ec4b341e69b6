// The ivshmem server protocol QEMU's ivshmem-doorbell device speaks (QEMU's
// docs/specs/ivshmem-spec.rst), as far as vgpud serves it: one VM per socket,
// vgpud itself is peer 0 (VGPU_IVSHMEM_HOST_PEER), the VM is peer 1.
//
// The server only sends. Each message is one little-endian int64, alone in
// its sendmsg, optionally with one descriptor:
//   1. the protocol version (0)
//   2. the client's own peer id
//   3. -1 with the shared-memory descriptor
//   4. per other peer, its id once per vector, each with the eventfd that
//      interrupts that peer on that vector (here: vgpud's request doorbell)
//   5. the client's own id once per vector, each with the eventfd it receives
//      that vector's interrupts on (here: the VM's response doorbell)
// (IvshmemSetup::replug sends spare peers, 5, spare peers, then 4.)
// then, later, a peer id without a descriptor when that peer disconnects.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "vgpu/protocol/status.h"

namespace vgpu::transport {

// A SOCK_STREAM listener at `path` (what QEMU's `-chardev socket,path=` and
// libvirt's <shmem><server path=/> connect to); a stale socket is replaced,
// mode 0660. Returns the fd (non-blocking, close-on-exec) or -1 with `why`.
int listen_unix_stream(const std::string& path, std::string* why);

// One protocol message. False if the peer is gone or the socket is full.
bool ivshmem_send(int sock, int64_t value, int fd = -1);

struct IvshmemSetup {
  uint16_t own_id = 0;               // the client's (the VM's) peer id
  int shm_fd = -1;                   // the region
  uint16_t peer_id = 0;              // the one other peer (vgpud)
  std::span<const int> peer_vectors;  // eventfds that interrupt the peer, per vector
  std::span<const int> own_vectors;   // eventfds the client is interrupted on, per vector
  // For a device plugged into a running QEMU in place of one unplugged
  // (device_replug.h in vgpud): after the region, half of kReplugSparePeers
  // spare peers, the client's own vectors, the other half, then the peer's
  // vectors. A QEMU without KVM (7.2 at least) leaves its handler on the
  // descriptor number of an unplugged ivshmem-doorbell's interrupt eventfd,
  // and the first readable descriptor that later takes that number runs the
  // handler on freed memory: QEMU crashes. The new device's descriptors take
  // the lowest free numbers in the order sent, so the stale number goes to a
  // spare peer's eventfd (which no one writes) or to the client's new
  // interrupt eventfd (whose handler replaces the stale one): after a boot's
  // device while fewer than 16 other descriptors of that QEMU were freed
  // meanwhile, after a replugged one while fewer than 9 (docs/libvirt.md).
  bool replug = false;
};

inline constexpr int kReplugSparePeers = 16;

// Sends the whole connect sequence (steps 1-5). The descriptors stay owned by
// the caller. kInvalidValue for equal ids, no region or no vectors;
// kDevicesUnavailable if the client went away.
Status ivshmem_send_setup(int sock, const IvshmemSetup& setup);

}  // namespace vgpu::transport
