/* vgpu: how a real VM's region is shared among the VM's processes, and how
 * the ivshmem device carries it. Shared by the guest kernel module (C, kernel
 * headers) and the host daemon. See docs/kernel-module.md.
 *
 * A simulated VM is one process: its region and its whole data area are its
 * own, and every message carries client 0. A real VM has one region for all
 * its processes. The guest kernel module stamps every request with the
 * process's client id, which user mode cannot choose, and splits the data
 * area into VGPU_VM_SLOTS equal slots, one per open /dev/vgpu file:
 *
 *   client = (generation << 8) | (slot + 1)      slot < VGPU_VM_SLOTS
 *
 * The host serves a client only the data-area bytes of its own slot, so one
 * process cannot name another's staged bytes. Client 0 on a VM channel is the
 * kernel module itself: a Goodbye from client 0 ("the guest kernel attached")
 * makes the host release everything the VM's processes held, so a guest that
 * reboots or reloads the module leaks nothing.
 */
#ifndef VGPU_PROTOCOL_VM_REGION_H
#define VGPU_PROTOCOL_VM_REGION_H

#include "region.h"

#define VGPU_VM_SLOTS 16u
#define VGPU_VM_SLOT_ALIGN 4096u
#define VGPU_VM_MIN_SLOT (256u * 1024u) /* a region too small for this is refused */

/* Slot size for a data area: equal, page-aligned parts. */
#define VGPU_VM_SLOT_SIZE(data_size) \
  (((data_size) / VGPU_VM_SLOTS) & ~(uint64_t)(VGPU_VM_SLOT_ALIGN - 1))

#define VGPU_VM_CLIENT(generation, slot) \
  ((uint32_t)(((uint32_t)(generation) << 8) | ((uint32_t)(slot) + 1u)))
/* The slot of a client id; >= VGPU_VM_SLOTS for client 0 or a malformed id. */
#define VGPU_VM_CLIENT_SLOT(client) ((uint32_t)(((client) & 0xffu) - 1u))
#define VGPU_VM_KERNEL_CLIENT 0u

/* The one call the module sends itself (calls.def: Goodbye, 0x0003): on
 * release of a file, stamped with its client, and at attach, from client 0.
 * Its request is one reserved u64. */
#define VGPU_OP_GOODBYE 0x0003u
#define VGPU_GOODBYE_PAYLOAD 8u

/* ivshmem-doorbell: vgpud is peer 0 on each VM's socket, the VM is peer 1.
 * One interrupt vector each way: the guest rings (peer 0, vector 0) when it
 * has written requests or freed reply space; the host rings the guest's
 * vector 0 when it has written replies, freed request space, or closed the
 * channel. */
#define VGPU_IVSHMEM_HOST_PEER 0u
#define VGPU_IVSHMEM_GUEST_PEER 1u
#define VGPU_IVSHMEM_VECTORS 1u
#define VGPU_IVSHMEM_PROTOCOL 0 /* QEMU's ivshmem server protocol version */

#endif /* VGPU_PROTOCOL_VM_REGION_H */
