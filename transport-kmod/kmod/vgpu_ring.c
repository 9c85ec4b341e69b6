// SPDX-License-Identifier: GPL-2.0
/* vgpu guest kernel module: one direction of the region, the same rules as
 * transport-kmod/src/ring.cpp (protocol/region.h). The index the other side
 * publishes is untrusted and checked on every use; a ring that breaks the
 * rules is marked corrupt and never used again. */
#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <asm/barrier.h>

#include "vgpu_drv.h"

static u32 vgpu_record_size(u32 len)
{
	return (len + VGPU_MSG_ALIGN - 1) & ~(VGPU_MSG_ALIGN - 1);
}

void vgpu_ring_init_writer(struct vgpu_ring *r, struct vgpu_ring_ctl *ctl, u8 *bytes, u32 size)
{
	r->ctl = ctl;
	r->bytes = bytes;
	r->size = size;
	r->index = smp_load_acquire(&ctl->head);
	r->corrupt = false;
}

void vgpu_ring_init_reader(struct vgpu_ring *r, struct vgpu_ring_ctl *ctl, u8 *bytes, u32 size)
{
	r->ctl = ctl;
	r->bytes = bytes;
	r->size = size;
	r->index = smp_load_acquire(&ctl->tail);
	r->corrupt = false;
}

/* Bytes a record needs at the current head, padding to the end included. */
static u32 vgpu_ring_need(const struct vgpu_ring *r, u32 record)
{
	u32 contiguous = r->size - (r->index & (r->size - 1));

	return contiguous < record ? contiguous + record : record;
}

bool vgpu_ring_has_room(const struct vgpu_ring *r, u32 len)
{
	u32 tail = smp_load_acquire(&r->ctl->tail);

	if (r->index - tail > r->size)
		return false;
	return r->size - (r->index - tail) >= vgpu_ring_need(r, vgpu_record_size(len));
}

int vgpu_ring_write(struct vgpu_ring *r, const void *msg, u32 len)
{
	u32 record = vgpu_record_size(len);
	u32 tail, pos, contiguous;

	if (r->corrupt)
		return -EIO;
	if (len < VGPU_MSG_HEADER_SIZE || record > VGPU_MSG_MAX_SIZE)
		return -EINVAL;
	tail = smp_load_acquire(&r->ctl->tail);
	if (r->index - tail > r->size || (tail & (VGPU_MSG_ALIGN - 1)) != 0) {
		r->corrupt = true; /* the consumer published an index it cannot have */
		return -EIO;
	}
	if (r->size - (r->index - tail) < vgpu_ring_need(r, record))
		return -ENOSPC;

	pos = r->index & (r->size - 1);
	contiguous = r->size - pos;
	if (contiguous < record) {
		/* The message would straddle the end: pad to the end, start at 0. */
		if (contiguous >= VGPU_MSG_HEADER_SIZE) {
			struct vgpu_msg_header pad = {
				.magic = VGPU_MSG_MAGIC,
				.version = VGPU_PROTOCOL_VERSION,
				.opcode = VGPU_OP_PAD,
				.payload_len = contiguous - VGPU_MSG_HEADER_SIZE,
			};
			memcpy(r->bytes + pos, &pad, sizeof(pad));
		}
		r->index += contiguous;
		pos = 0;
	}
	memcpy(r->bytes + pos, msg, len);
	r->index += record;
	smp_store_release(&r->ctl->head, r->index);
	return 0;
}

bool vgpu_ring_consumer_waiting(const struct vgpu_ring *r)
{
	smp_mb();
	return READ_ONCE(r->ctl->consumer_waiting) != 0;
}

void vgpu_ring_set_producer_waiting(struct vgpu_ring *r, bool waiting)
{
	smp_store_release(&r->ctl->producer_waiting, waiting ? 1u : 0u);
	smp_mb();
}

bool vgpu_ring_empty(const struct vgpu_ring *r)
{
	return smp_load_acquire(&r->ctl->head) == r->index;
}

bool vgpu_ring_producer_waiting(const struct vgpu_ring *r)
{
	smp_mb();
	return READ_ONCE(r->ctl->producer_waiting) != 0;
}

void vgpu_ring_set_consumer_waiting(struct vgpu_ring *r, bool waiting)
{
	smp_store_release(&r->ctl->consumer_waiting, waiting ? 1u : 0u);
	smp_mb();
}

static void vgpu_ring_consume(struct vgpu_ring *r, u32 bytes)
{
	r->index += bytes;
	smp_store_release(&r->ctl->tail, r->index);
}

static int vgpu_ring_broken(struct vgpu_ring *r)
{
	r->corrupt = true;
	return -EIO;
}

int vgpu_ring_read(struct vgpu_ring *r, u8 *buf, u32 *len)
{
	struct vgpu_msg_header h;
	u32 head, used, pos, contiguous, total, record;

	if (r->corrupt)
		return -EIO;
	for (;;) {
		head = smp_load_acquire(&r->ctl->head);
		used = head - r->index;
		if (used == 0)
			return 0;
		if (used > r->size || (used & (VGPU_MSG_ALIGN - 1)) != 0)
			return vgpu_ring_broken(r);
		pos = r->index & (r->size - 1);
		contiguous = r->size - pos;
		if (contiguous < VGPU_MSG_HEADER_SIZE) { /* too short for a header: skipped */
			if (used < contiguous)
				return vgpu_ring_broken(r);
			vgpu_ring_consume(r, contiguous);
			continue;
		}
		if (used < VGPU_MSG_HEADER_SIZE)
			return vgpu_ring_broken(r);
		/* Copy the header once: the producer may change shared memory at will. */
		memcpy(&h, r->bytes + pos, sizeof(h));
		if (h.magic != VGPU_MSG_MAGIC || h.payload_len > VGPU_MSG_MAX_PAYLOAD)
			return vgpu_ring_broken(r);
		total = VGPU_MSG_HEADER_SIZE + h.payload_len;
		record = vgpu_record_size(total);
		if (h.opcode == VGPU_OP_PAD && !(h.flags & VGPU_MSG_REPLY) && h.request_id == 0) {
			if (record != contiguous || used < contiguous)
				return vgpu_ring_broken(r);
			vgpu_ring_consume(r, contiguous);
			continue;
		}
		if (record > contiguous || record > used)
			return vgpu_ring_broken(r);
		memcpy(buf, &h, sizeof(h));
		memcpy(buf + sizeof(h), r->bytes + pos + sizeof(h), h.payload_len);
		vgpu_ring_consume(r, record);
		*len = total;
		return 1;
	}
}
