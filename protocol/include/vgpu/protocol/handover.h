/* vgpu hand-over: how a simulated VM (a process on the host, or a container)
 * obtains its shared-memory region and doorbells from vgpud.
 *
 * The client connects to the daemon's Unix socket (SOCK_SEQPACKET) at
 * <runtime-dir>/vgpud.sock and sends one vgpu_hello. The daemon answers with one
 * vgpu_welcome; on success the message carries three descriptors (SCM_RIGHTS):
 * the region (a memfd), the request doorbell (guest rings, host sleeps on it)
 * and the response doorbell (host rings, guest sleeps on it). The connection
 * stays open for the life of the client: when it closes, the daemon releases
 * everything the client held. This is the same hand-over QEMU's ivshmem device
 * gets from an ivshmem server, so the daemon treats both kinds of VM alike.
 */
#ifndef VGPU_PROTOCOL_HANDOVER_H
#define VGPU_PROTOCOL_HANDOVER_H

#include "wire_header.h"

#define VGPU_HELLO_MAGIC 0x4c484756u   /* "VGHL" */
#define VGPU_WELCOME_MAGIC 0x4c574756u /* "VGWL" */
#define VGPU_HANDOVER_VERSION 1u
#define VGPU_VM_NAME_MAX 64u /* including the terminating NUL */
#define VGPU_SOCKET_NAME "vgpud.sock"

struct vgpu_hello {
  uint32_t magic;   /* VGPU_HELLO_MAGIC */
  uint16_t version; /* VGPU_HANDOVER_VERSION */
  uint16_t reserved;
  char vm_name[VGPU_VM_NAME_MAX]; /* [A-Za-z0-9._-]{1,63}, NUL-terminated */
};
VGPU_STATIC_ASSERT(sizeof(struct vgpu_hello) == 72, "hello layout");

struct vgpu_welcome {
  uint32_t magic;       /* VGPU_WELCOME_MAGIC */
  int32_t status;       /* 0, or a cudaError_t value explaining the refusal */
  uint64_t region_size; /* bytes of the region descriptor */
  char message[112];    /* a human-readable reason when status != 0 */
};
VGPU_STATIC_ASSERT(sizeof(struct vgpu_welcome) == 128, "welcome layout");

#endif /* VGPU_PROTOCOL_HANDOVER_H */
