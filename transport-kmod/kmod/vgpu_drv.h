/* SPDX-License-Identifier: GPL-2.0 */
/* vgpu guest kernel module: internal declarations.
 *
 * One ivshmem device (1af4:1110) carries the VM's region: BAR0 holds the
 * ivshmem registers, BAR2 the region (protocol/region.h). The module is the
 * VM's side of the ring protocol: every process that opens /dev/vgpu is one
 * client with its own slot of the data area (protocol/vm_region.h); requests
 * are stamped with the file's client id, replies are routed to the file whose
 * client they carry. See docs/kernel-module.md.
 *
 * Locks, in the order they nest:
 *   files_lock (mutex)  which file holds which slot (open, release, remove)
 *   rx_lock (mutex)  the response-ring reader and every read of shared memory
 *                    outside the request ring
 *   tx_lock (mutex)  the request-ring writer
 *   lock (spinlock)  slots, wanted_irqs, dead, silent
 *   file->lock       the file's reply queue
 * rx_lock and tx_lock are never held together. Shared memory is touched only
 * under rx_lock or tx_lock, and only while !dead: remove() sets dead, then
 * takes and drops both, so nothing touches the BARs after it unmaps them.
 * (The watchdog's look at a silent host is the exception: remove() sets
 * removed, then waits for the watchdog to end.)
 */
#ifndef VGPU_KMOD_DRV_H
#define VGPU_KMOD_DRV_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "vgpu/protocol/vm_region.h"
#include "vgpu/transport/vgpu_dev.h"

/* ivshmem BAR0 registers (QEMU docs/specs/ivshmem-spec.rst) */
#define IVSHMEM_REG_INTR_MASK 0
#define IVSHMEM_REG_INTR_STATUS 4
#define IVSHMEM_REG_IV_POSITION 8
#define IVSHMEM_REG_DOORBELL 12

/* The request id of the Goodbyes the module sends itself (user space cannot
 * send Goodbye, so no user request carries it on a Goodbye). */
#define VGPU_KMOD_GOODBYE_ID (~0ull)

/* One direction of the region as this side sees it. */
struct vgpu_ring {
	struct vgpu_ring_ctl *ctl;
	u8 *bytes;
	u32 size;
	u32 index; /* private head (writer) or tail (reader) */
	bool corrupt;
};

void vgpu_ring_init_writer(struct vgpu_ring *r, struct vgpu_ring_ctl *ctl, u8 *bytes, u32 size);
void vgpu_ring_init_reader(struct vgpu_ring *r, struct vgpu_ring_ctl *ctl, u8 *bytes, u32 size);
/* 0 written, -ENOSPC no room now, -EIO the consumer broke the rules. */
int vgpu_ring_write(struct vgpu_ring *r, const void *msg, u32 len);
bool vgpu_ring_has_room(const struct vgpu_ring *r, u32 len);
bool vgpu_ring_consumer_waiting(const struct vgpu_ring *r);
void vgpu_ring_set_producer_waiting(struct vgpu_ring *r, bool waiting);
/* 1 one message copied to buf (VGPU_MSG_MAX_SIZE bytes) with *len set,
 * 0 empty, -EIO the producer broke the rules. */
int vgpu_ring_read(struct vgpu_ring *r, u8 *buf, u32 *len);
bool vgpu_ring_empty(const struct vgpu_ring *r);
bool vgpu_ring_producer_waiting(const struct vgpu_ring *r);
void vgpu_ring_set_consumer_waiting(struct vgpu_ring *r, bool waiting);

/* A slot of the data area:
 *   FREE -> OPEN (open) -> GOODBYE (release: a Goodbye is owed to the host)
 *        -> DRAINING (the Goodbye is in the ring) -> FREE (its reply came)
 * and any state -> FREE once the device is dead. */
enum vgpu_slot_state {
	VGPU_SLOT_FREE,
	VGPU_SLOT_OPEN,
	VGPU_SLOT_GOODBYE,
	VGPU_SLOT_DRAINING,
};

struct vgpu_file;

struct vgpu_slot {
	enum vgpu_slot_state state;
	u32 generation;
	u32 client;
	struct vgpu_file *file; /* OPEN only */
};

struct vgpu_device {
	struct kref ref;
	struct pci_dev *pdev;
	void __iomem *regs; /* BAR0 */
	u8 *shm;            /* BAR2, write-back */
	phys_addr_t shm_phys;
	u64 shm_len;
	struct vgpu_region_header *hdr;
	/* Geometry, validated at probe and never re-read. */
	u64 data_offset;
	u64 data_size;
	u64 slot_size;
	bool interrupts; /* MSI-X doorbells; else everything polls */
	int irq;
	u32 peer_id;

	struct mutex tx_lock;
	struct vgpu_ring req;
	wait_queue_head_t tx_wq; /* waiting for room in the request ring */

	struct mutex rx_lock;
	struct vgpu_ring resp;
	u8 *rx_buf; /* one reply copied out of shared memory */

	struct mutex files_lock;
	spinlock_t lock;
	struct vgpu_slot slots[VGPU_VM_SLOTS];
	unsigned int wanted_irqs; /* sleepers + draining slots + polled files */
	wait_queue_head_t slot_wq; /* opens waiting for a released slot to be free */
	bool dead;                /* the host closed the channel, or remove() ran */
	bool removed;
	/* Dead only because the host's heartbeat stood still (vgpud stopped,
	 * or killed): the watchdog keeps looking, and a heartbeat that moves
	 * again revives the device for new files (vgpu_revive). */
	bool silent;

	struct delayed_work service; /* owed Goodbyes; polling when interrupts are off */
	/* Liveness (protocol/region.h): while callers wait for replies, the
	 * watchdog rings the host every second and fails everything once the
	 * host's heartbeat has stood still for VGPU_HOST_SILENT_CHECKS looks.
	 * A file that uses poll() may sleep there for its replies at any time,
	 * so while one is open the watchdog keeps watching too. Once the
	 * device is dead for silence, it rings and looks every second until
	 * the heartbeat moves (revived) or the host closes the channel.
	 * last_wait, polled_files, seen_heartbeat and silent_checks: under lock. */
	struct delayed_work watchdog;
	unsigned long last_wait; /* jiffies a caller last slept for a reply */
	unsigned int polled_files; /* open files that have used poll() */
	u64 seen_heartbeat;
	unsigned int silent_checks;
	struct miscdevice misc;
	bool misc_registered;
};

struct vgpu_reply {
	struct list_head node;
	u32 len;
	u8 data[];
};

struct vgpu_file {
	struct vgpu_device *dev;
	struct file *filp;
	u32 slot;
	u32 client;
	bool polled; /* poll() was used: counted in wanted_irqs until release */

	struct mutex tx_buf_lock;
	u8 *tx_buf; /* one request copied from user space */

	spinlock_t lock;
	struct list_head replies;
	size_t queued;
	bool broken; /* replies were lost: the file is unusable */
	wait_queue_head_t wq;
};

/* vgpu_main.c */
extern const struct file_operations vgpu_fops;
void vgpu_device_put(struct vgpu_device *dev);
void vgpu_ring_host(struct vgpu_device *dev);
/* Writes one message to the request ring. may_wait: sleep (interruptibly)
 * while the ring is full; else -EAGAIN. -EPIPE/-ENODEV once the device is dead. */
int vgpu_send(struct vgpu_device *dev, const void *msg, u32 len, bool may_wait);
/* Routes every reply in the response ring; returns how many (rx_lock taken
 * with trylock when !block: 0 if someone else is draining). */
int vgpu_drain(struct vgpu_device *dev, bool block);
bool vgpu_replies_pending(struct vgpu_device *dev);
void vgpu_want_irq(struct vgpu_device *dev, int delta);
void vgpu_publish_irq_wish(struct vgpu_device *dev); /* rx_lock held */
void vgpu_kick_service(struct vgpu_device *dev, unsigned long delay);
int vgpu_dead_errno(struct vgpu_device *dev);
/* Marks the device dead: every slot not open is free, every waiter wakes
 * (dev->lock held). */
void vgpu_mark_dead_locked(struct vgpu_device *dev);
/* Sends the kernel Goodbye: whatever the VM's processes held is released. */
int vgpu_attach(struct vgpu_device *dev);

/* vgpu_liveness.c */
void vgpu_watchdog(struct work_struct *work);
/* A caller is about to sleep for a reply: the watchdog keeps watching. */
void vgpu_note_wait(struct vgpu_device *dev);
/* A file started using poll() (+1) or one that had was released (-1): the
 * watchdog watches while any such file is open. */
void vgpu_note_polled(struct vgpu_device *dev, int delta);

#endif /* VGPU_KMOD_DRV_H */
