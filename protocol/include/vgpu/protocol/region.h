/* vgpu shared-memory region: the layout one VM (or one simulated VM process)
 * shares with the host daemon.
 *
 *   [ header | request ring (guest -> host) | response ring (host -> guest) | data area ]
 *
 * The host creates the region and writes the geometry; the guest only reads
 * it. The host never trusts anything in the region after creation: it keeps
 * its own copy of the geometry and validates every index and message it reads.
 *
 * Rings carry whole messages (wire_header.h), each padded to 8 bytes. A message
 * never straddles the end of a ring: when fewer than VGPU_MSG_HEADER_SIZE bytes
 * remain before the end they are skipped; otherwise, when the next message does
 * not fit, the producer fills the rest with a VGPU_OP_PAD message.
 *
 * head and tail are free-running byte counters (mod 2^32); ring_size is a power
 * of two, so the used bytes are head - tail and the offset is head & (size-1).
 *
 * Doorbells: each side sleeps on its own doorbell (an eventfd; an ivshmem
 * interrupt in a real VM): the host on the request doorbell, the guest on the
 * response doorbell. A consumer about to sleep sets consumer_waiting, issues a
 * full barrier, checks the ring once more, then blocks. A producer publishes
 * head with release order, issues a full barrier, and rings the other side's
 * doorbell if consumer_waiting is set. A producer facing a full ring does the
 * same with producer_waiting, and the consumer rings once it has freed at
 * least half the ring or emptied it (a producer that keeps filling the ring
 * then sleeps once per half ring, not once per message). So a busy side is
 * never woken per message, and an idle side sleeps.
 *
 * Liveness: the host's loop adds one to host_heartbeat each time it looks for
 * events (every few microseconds while busy, at least once a second while
 * idle, and whenever the guest rings). A
 * guest whose caller has waited a while for a reply rings and looks again: a
 * heartbeat that stands still for seconds means the host died without closing
 * the channel (killed outright) or is stopped, and the guest fails its calls.
 * It keeps ringing and looking: if the heartbeat moves again (the host was
 * only stopped), it attaches afresh (a kernel Goodbye) and serves new
 * processes.
 */
#ifndef VGPU_PROTOCOL_REGION_H
#define VGPU_PROTOCOL_REGION_H

#include "wire_header.h"

#define VGPU_REGION_MAGIC 0x47524756u /* "VGRG" */
#define VGPU_REGION_VERSION 2u
#define VGPU_REGION_HEADER_SIZE 4096u /* rings start on the next page */

/* host_state values */
#define VGPU_HOST_READY 1u
#define VGPU_HOST_CLOSED 2u /* the host tore this channel down; fail every call */

struct vgpu_ring_ctl {
  uint32_t head;             /* bytes produced; written only by the producer */
  uint32_t consumer_waiting; /* nonzero while the consumer sleeps on its doorbell */
  uint32_t producer_waiting; /* nonzero while the producer waits for space */
  uint8_t pad0[52];
  uint32_t tail;             /* bytes consumed; written only by the consumer */
  uint8_t pad1[60];
};
VGPU_STATIC_ASSERT(sizeof(struct vgpu_ring_ctl) == 128, "ring control is two cache lines");

struct vgpu_region_header {
  uint32_t magic;            /* VGPU_REGION_MAGIC */
  uint32_t version;          /* VGPU_REGION_VERSION */
  uint64_t region_size;      /* bytes in the whole region */
  uint32_t ring_size;        /* bytes in each ring, a power of two >= 2 * VGPU_MSG_MAX_SIZE */
  uint32_t max_message;      /* VGPU_MSG_MAX_SIZE */
  uint64_t req_ring_offset;  /* offsets from the start of the region */
  uint64_t resp_ring_offset;
  uint64_t data_offset;      /* the data area for bulk bytes (memcpy, fat binaries) */
  uint64_t data_size;
  uint32_t host_state;       /* VGPU_HOST_READY or VGPU_HOST_CLOSED */
  uint32_t reserved0;
  uint64_t host_heartbeat;   /* written only by the host's loop (Liveness above); own cache line */
  uint8_t pad[56];
  struct vgpu_ring_ctl req;  /* guest -> host */
  struct vgpu_ring_ctl resp; /* host -> guest */
};
VGPU_STATIC_ASSERT(sizeof(struct vgpu_region_header) == 384, "region header layout");
VGPU_STATIC_ASSERT(sizeof(struct vgpu_region_header) <= VGPU_REGION_HEADER_SIZE,
                   "region header fits its page");

#endif /* VGPU_PROTOCOL_REGION_H */
