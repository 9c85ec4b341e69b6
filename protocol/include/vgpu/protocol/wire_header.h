/* vgpu wire format: the fixed message header.
 *
 * Shared by the guest library, the guest kernel module (C, kernel headers) and
 * the host daemon. Every message in a ring is this header followed by
 * payload_len bytes of payload, padded to VGPU_MSG_ALIGN. All fields are
 * little-endian and fixed-width. See docs/wire-format.md.
 */
#ifndef VGPU_PROTOCOL_WIRE_HEADER_H
#define VGPU_PROTOCOL_WIRE_HEADER_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

#ifdef __cplusplus
#define VGPU_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define VGPU_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define VGPU_MSG_MAGIC 0x55504756u /* "VGPU" as little-endian bytes */
#define VGPU_PROTOCOL_VERSION 1u
#define VGPU_MSG_HEADER_SIZE 32u
#define VGPU_MSG_MAX_SIZE 65536u /* header + payload; larger data goes through the data area */
#define VGPU_MSG_MAX_PAYLOAD (VGPU_MSG_MAX_SIZE - VGPU_MSG_HEADER_SIZE)
#define VGPU_MSG_ALIGN 8u

/* Opcode 0 is never a call: it marks ring padding (see region.h). */
#define VGPU_OP_PAD 0u

enum vgpu_msg_flags {
  VGPU_MSG_REPLY = 1u << 0, /* host -> guest: the answer to request_id */
  VGPU_MSG_QUIET = 1u << 1, /* guest -> host: reply only if the call fails */
};
#define VGPU_MSG_KNOWN_FLAGS (VGPU_MSG_REPLY | VGPU_MSG_QUIET)

struct vgpu_msg_header {
  uint32_t magic;       /* VGPU_MSG_MAGIC */
  uint16_t version;     /* VGPU_PROTOCOL_VERSION */
  uint16_t opcode;      /* one of the calls in calls.def, or VGPU_OP_PAD */
  uint64_t request_id;  /* chosen by the guest; echoed in the reply */
  uint32_t flags;       /* vgpu_msg_flags */
  uint32_t payload_len; /* bytes after this header, before padding */
  uint32_t client;      /* guest process, stamped by the kernel module; 0 from a simulated VM */
  int32_t status;       /* replies: a cudaError_t value; requests: 0 */
};
VGPU_STATIC_ASSERT(sizeof(struct vgpu_msg_header) == VGPU_MSG_HEADER_SIZE,
                   "the message header is 32 bytes on the wire");

/* Bytes a message of payload_len occupies in a ring. */
#define VGPU_MSG_RECORD_SIZE(payload_len) \
  (((VGPU_MSG_HEADER_SIZE + (payload_len)) + (VGPU_MSG_ALIGN - 1)) & ~(VGPU_MSG_ALIGN - 1))

#endif /* VGPU_PROTOCOL_WIRE_HEADER_H */
