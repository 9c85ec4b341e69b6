/* /dev/vgpu: the interface between the guest kernel module and the guest
 * library (user space of a real VM). Versioned; every struct has fixed-width
 * fields, explicit padding and a size check. See docs/kernel-module.md.
 *
 *   fd = open("/dev/vgpu", O_RDWR)        one client (a slot of the data area)
 *   ioctl(fd, VGPU_IOC_INFO, &info)        ABI version, slot size
 *   mmap(0, info.slot_size, RW, MAP_SHARED, fd, 0)  this file's data slot
 *   ioctl(fd, VGPU_IOC_SUBMIT, &submit)    one request (header + payload); with
 *                                          VGPU_DEV_SUBMIT_NOWAIT (when INFO has
 *                                          VGPU_DEV_INFO_SUBMIT_NOWAIT) EAGAIN
 *                                          instead of waiting for room in the ring
 *   ioctl(fd, VGPU_IOC_RECEIVE, &receive)  the next reply for this file
 *   ioctl(fd, VGPU_IOC_RECEIVE_SPIN, &r)   the same, polling r.spin_us before
 *                                          sleeping (when INFO has VGPU_DEV_INFO_RECEIVE_SPIN)
 *   poll(fd): POLLIN when a reply is queued, POLLHUP|POLLERR once the host is gone
 *   close(fd): the host releases everything this file held
 *
 * Errors: EINVAL malformed argument or message, EFAULT bad pointer,
 * EMSGSIZE reply larger than the buffer (receive.len says how large; the
 * reply stays queued), ETIMEDOUT no reply within timeout_ms, EAGAIN
 * timeout_ms 0 and no reply (or a NOWAIT submit and no room: nothing written), EPIPE the host closed the VM's channel,
 * EHOSTDOWN the host stopped answering (new files work again once it does),
 * ENODEV the device was removed, EBUSY (open) every slot is in use, EIO the
 * file lost replies (it let more than VGPU_DEV_MAX_QUEUED bytes pile up, or
 * it was open while the host was silent).
 */
#ifndef VGPU_TRANSPORT_VGPU_DEV_H
#define VGPU_TRANSPORT_VGPU_DEV_H

#ifdef __KERNEL__
#include <linux/ioctl.h>
#include <linux/types.h>
#else
#include <linux/ioctl.h>
#include <stdint.h>
#endif

#ifdef __cplusplus
#define VGPU_DEV_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define VGPU_DEV_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define VGPU_DEV_PATH "/dev/vgpu"
#define VGPU_DEV_ABI_VERSION 1u
#define VGPU_DEV_MAX_QUEUED (8u << 20) /* reply bytes a file may leave unread */

struct vgpu_dev_info {
  uint32_t abi_version; /* VGPU_DEV_ABI_VERSION */
  uint32_t client;      /* the id the module stamps on this file's requests */
  uint64_t slot_size;   /* bytes of this file's data slot (the mmap length) */
  uint32_t max_message; /* VGPU_MSG_MAX_SIZE */
  uint32_t flags;       /* VGPU_DEV_INFO_* */
  uint64_t reserved[4];
};
VGPU_DEV_STATIC_ASSERT(sizeof(struct vgpu_dev_info) == 56, "vgpu_dev_info layout");
#define VGPU_DEV_INFO_INTERRUPTS 1u   /* doorbell interrupts (else the module polls) */
#define VGPU_DEV_INFO_RECEIVE_SPIN 2u /* VGPU_IOC_RECEIVE_SPIN is there */
#define VGPU_DEV_INFO_SUBMIT_NOWAIT 4u /* VGPU_IOC_SUBMIT takes VGPU_DEV_SUBMIT_NOWAIT */

struct vgpu_dev_submit {
  uint64_t msg;   /* user pointer: a message header followed by its payload */
  uint32_t len;   /* 32 .. VGPU_MSG_MAX_SIZE; must equal 32 + header.payload_len */
  uint32_t flags; /* 0 or VGPU_DEV_SUBMIT_NOWAIT */
};
VGPU_DEV_STATIC_ASSERT(sizeof(struct vgpu_dev_submit) == 16, "vgpu_dev_submit layout");
/* EAGAIN, nothing written, while the request ring is full. The host reads no
 * more of the VM's requests while the VM leaves its replies unread, so a
 * process with replies coming takes them (RECEIVE) before it tries again. */
#define VGPU_DEV_SUBMIT_NOWAIT 1u

struct vgpu_dev_receive {
  uint64_t buf;       /* user pointer */
  uint32_t cap;       /* bytes at buf */
  uint32_t len;       /* out: bytes of the reply (also set on EMSGSIZE) */
  int32_t timeout_ms; /* -1 waits until a reply or the host is gone; 0 does not wait */
  uint32_t flags;     /* 0 */
};
VGPU_DEV_STATIC_ASSERT(sizeof(struct vgpu_dev_receive) == 24, "vgpu_dev_receive layout");

/* A receive that polls for the reply for spin_us before it sleeps (plain
 * VGPU_IOC_RECEIVE polls 50 us). A process that knows its reply is further
 * off (copies in flight) keeps its vCPU awake for it: waking a halted vCPU
 * costs tens of microseconds. */
#define VGPU_DEV_MAX_SPIN_US 1000u
struct vgpu_dev_receive_spin {
  struct vgpu_dev_receive receive;
  uint32_t spin_us;  /* 0 .. VGPU_DEV_MAX_SPIN_US */
  uint32_t reserved; /* 0 */
};
VGPU_DEV_STATIC_ASSERT(sizeof(struct vgpu_dev_receive_spin) == 32, "vgpu_dev_receive_spin layout");

#define VGPU_IOC_MAGIC 0xB6
#define VGPU_IOC_INFO _IOR(VGPU_IOC_MAGIC, 0, struct vgpu_dev_info)
#define VGPU_IOC_SUBMIT _IOW(VGPU_IOC_MAGIC, 1, struct vgpu_dev_submit)
#define VGPU_IOC_RECEIVE _IOWR(VGPU_IOC_MAGIC, 2, struct vgpu_dev_receive)
#define VGPU_IOC_RECEIVE_SPIN _IOWR(VGPU_IOC_MAGIC, 3, struct vgpu_dev_receive_spin)

#endif /* VGPU_TRANSPORT_VGPU_DEV_H */
