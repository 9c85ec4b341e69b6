// SPDX-License-Identifier: GPL-2.0
/* vgpu guest kernel module: /dev/vgpu. Each open file is one client of the
 * host: its own client id (stamped on every request it submits; user space
 * cannot choose it), its own slot of the data area (mmap), its own reply
 * queue. The ioctl ABI is transport-kmod/include/vgpu/transport/vgpu_dev.h. */
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "vgpu_drv.h"

#define VGPU_SPIN_US 50 /* receive polls this long first (kPollBeforeSleep, protocol/polling.h) */
#define VGPU_SLEEP_SLICE (HZ / 10) /* re-check the host at least this often */
#define VGPU_POLL_MIN_US 20     /* polling mode: first sleep ... */
#define VGPU_POLL_MAX_US 1000   /* ... doubling up to this */
#define VGPU_OPEN_WAIT_MS 2000  /* open waits this long for a slot being released */

/* A FREE slot, or none while some slot is still being released. */
static bool vgpu_slot_free(struct vgpu_device *dev)
{
	bool free = false;
	unsigned int i;

	spin_lock(&dev->lock);
	for (i = 0; i < VGPU_VM_SLOTS; i++)
		free = free || dev->slots[i].state == VGPU_SLOT_FREE;
	free = free || dev->dead;
	spin_unlock(&dev->lock);
	return free;
}

/* Gives `f` a free slot and a client id: 0, -EAGAIN if every slot is taken
 * but some are being released, -EBUSY if every slot is open. */
static int vgpu_take_slot(struct vgpu_device *dev, struct vgpu_file *f)
{
	bool releasing = false;
	unsigned int i;
	int ret = -EBUSY;

	mutex_lock(&dev->files_lock);
	spin_lock(&dev->lock);
	if (dev->dead) {
		ret = vgpu_dead_errno(dev);
		goto out;
	}
	for (i = 0; i < VGPU_VM_SLOTS; i++) {
		struct vgpu_slot *s = &dev->slots[i];

		if (s->state != VGPU_SLOT_FREE) {
			releasing = releasing || s->state != VGPU_SLOT_OPEN;
			continue;
		}
		/* A new generation per use, so a late reply to the slot's last
		 * owner never matches the new one. */
		s->generation = (s->generation + 1) & 0xffffff;
		s->client = VGPU_VM_CLIENT(s->generation, i);
		s->state = VGPU_SLOT_OPEN;
		s->file = f;
		f->slot = i;
		f->client = s->client;
		kref_get(&dev->ref);
		ret = 0;
		goto out;
	}
	if (releasing)
		ret = -EAGAIN;
out:
	spin_unlock(&dev->lock);
	mutex_unlock(&dev->files_lock);
	return ret;
}

static int vgpu_open(struct inode *inode, struct file *filp)
{
	struct miscdevice *misc = filp->private_data;
	struct vgpu_device *dev = container_of(misc, struct vgpu_device, misc);
	struct vgpu_file *f;
	int ret;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->tx_buf = kvmalloc(VGPU_MSG_MAX_SIZE, GFP_KERNEL);
	if (!f->tx_buf) {
		kfree(f);
		return -ENOMEM;
	}
	f->dev = dev;
	f->filp = filp;
	mutex_init(&f->tx_buf_lock);
	spin_lock_init(&f->lock);
	INIT_LIST_HEAD(&f->replies);
	init_waitqueue_head(&f->wq);
	/* A slot whose process just closed comes back once the host has
	 * answered its Goodbye (milliseconds): wait for that rather than fail. */
	for (;;) {
		if (!dev->interrupts)
			vgpu_drain(dev, false); /* frees slots whose Goodbye was answered */
		ret = vgpu_take_slot(dev, f);
		if (ret != -EAGAIN)
			break;
		if (!wait_event_interruptible_timeout(dev->slot_wq, vgpu_slot_free(dev),
						      msecs_to_jiffies(VGPU_OPEN_WAIT_MS))) {
			ret = -EBUSY;
			break;
		}
		if (signal_pending(current)) {
			ret = -ERESTARTSYS;
			break;
		}
	}
	if (ret) {
		kvfree(f->tx_buf);
		kfree(f);
		return ret;
	}
	filp->private_data = f;
	return nonseekable_open(inode, filp);
}

static void vgpu_free_replies(struct vgpu_file *f)
{
	struct vgpu_reply *r, *next;

	list_for_each_entry_safe(r, next, &f->replies, node) {
		list_del(&r->node);
		kfree(r);
	}
	f->queued = 0;
}

/* The process is done (or died): its pending replies are dropped and the
 * host is told to release everything it held (a Goodbye stamped with its
 * client, sent by the service work so release never blocks). */
static int vgpu_release(struct inode *inode, struct file *filp)
{
	struct vgpu_file *f = filp->private_data;
	struct vgpu_device *dev = f->dev;
	struct vgpu_slot *s = &dev->slots[f->slot];
	bool owed;

	mutex_lock(&dev->files_lock);
	spin_lock(&dev->lock);
	s->file = NULL;
	owed = !dev->dead;
	s->state = owed ? VGPU_SLOT_GOODBYE : VGPU_SLOT_FREE;
	spin_unlock(&dev->lock);
	mutex_unlock(&dev->files_lock);

	if (f->polled) {
		vgpu_want_irq(dev, -1);
		vgpu_note_polled(dev, -1);
	}
	if (owed)
		vgpu_kick_service(dev, 0);
	spin_lock(&f->lock);
	vgpu_free_replies(f);
	spin_unlock(&f->lock);
	kvfree(f->tx_buf);
	kfree(f);
	vgpu_device_put(dev);
	return 0;
}

static long vgpu_ioctl_info(struct vgpu_file *f, void __user *argp)
{
	struct vgpu_dev_info info = {
		.abi_version = VGPU_DEV_ABI_VERSION,
		.client = f->client,
		.slot_size = f->dev->slot_size,
		.max_message = VGPU_MSG_MAX_SIZE,
		.flags = (f->dev->interrupts ? VGPU_DEV_INFO_INTERRUPTS : 0) |
			 VGPU_DEV_INFO_RECEIVE_SPIN | VGPU_DEV_INFO_SUBMIT_NOWAIT,
	};

	return copy_to_user(argp, &info, sizeof(info)) ? -EFAULT : 0;
}

/* A request from user space: a whole message, checked, stamped, written. */
static long vgpu_ioctl_submit(struct vgpu_file *f, void __user *argp)
{
	struct vgpu_dev_submit a;
	struct vgpu_msg_header h;
	long ret;

	if (copy_from_user(&a, argp, sizeof(a)))
		return -EFAULT;
	if ((a.flags & ~VGPU_DEV_SUBMIT_NOWAIT) || a.len < VGPU_MSG_HEADER_SIZE ||
	    a.len > VGPU_MSG_MAX_SIZE)
		return -EINVAL;
	if (mutex_lock_interruptible(&f->tx_buf_lock))
		return -ERESTARTSYS;
	/* One copy: what is checked is what is sent. */
	if (copy_from_user(f->tx_buf, u64_to_user_ptr(a.msg), a.len)) {
		ret = -EFAULT;
		goto out;
	}
	memcpy(&h, f->tx_buf, sizeof(h));
	if (h.magic != VGPU_MSG_MAGIC || h.version != VGPU_PROTOCOL_VERSION ||
	    h.opcode == VGPU_OP_PAD || h.opcode == VGPU_OP_GOODBYE ||
	    (h.flags & ~(u32)VGPU_MSG_QUIET) || h.payload_len != a.len - VGPU_MSG_HEADER_SIZE ||
	    h.client != 0 || h.status != 0) {
		ret = -EINVAL;
		goto out;
	}
	if (READ_ONCE(f->broken)) {
		ret = -EIO;
		goto out;
	}
	h.client = f->client; /* the module's stamp, never the caller's */
	memcpy(f->tx_buf, &h, sizeof(h));
	ret = vgpu_send(f->dev, f->tx_buf, a.len, !(a.flags & VGPU_DEV_SUBMIT_NOWAIT));
out:
	mutex_unlock(&f->tx_buf_lock);
	return ret;
}

static struct vgpu_reply *vgpu_take_reply(struct vgpu_file *f)
{
	struct vgpu_reply *r;

	spin_lock(&f->lock);
	r = list_first_entry_or_null(&f->replies, struct vgpu_reply, node);
	if (r) {
		list_del(&r->node);
		f->queued -= r->len;
	}
	spin_unlock(&f->lock);
	return r;
}

static void vgpu_put_back(struct vgpu_file *f, struct vgpu_reply *r)
{
	spin_lock(&f->lock);
	list_add(&r->node, &f->replies);
	f->queued += r->len;
	spin_unlock(&f->lock);
}

static bool vgpu_file_ready(struct vgpu_file *f)
{
	bool ready;

	spin_lock(&f->lock);
	ready = !list_empty(&f->replies) || f->broken;
	spin_unlock(&f->lock);
	return ready || READ_ONCE(f->dev->dead);
}

/* Sleeps until a reply for this file may be there: on the doorbell with
 * interrupts (at most VGPU_SLEEP_SLICE), else a short, growing nap. */
static int vgpu_wait(struct vgpu_file *f, ktime_t deadline, unsigned int *nap_us)
{
	struct vgpu_device *dev = f->dev;
	long left = VGPU_SLEEP_SLICE, ret;

	if (deadline) {
		s64 ns = ktime_to_ns(ktime_sub(deadline, ktime_get()));

		if (ns <= 0)
			return 0;
		left = min_t(long, left, nsecs_to_jiffies(ns) + 1);
	}
	vgpu_note_wait(dev);
	if (!dev->interrupts) {
		ktime_t nap = ns_to_ktime((u64)*nap_us * NSEC_PER_USEC);

		set_current_state(TASK_INTERRUPTIBLE);
		if (!vgpu_file_ready(f))
			schedule_hrtimeout_range(&nap, *nap_us * NSEC_PER_USEC / 4, HRTIMER_MODE_REL);
		__set_current_state(TASK_RUNNING);
		*nap_us = min(*nap_us * 2, (unsigned int)VGPU_POLL_MAX_US);
		return signal_pending(current) ? -ERESTARTSYS : 0;
	}
	/* Ask the host to ring, then look once more before sleeping. */
	vgpu_want_irq(dev, 1);
	if (vgpu_replies_pending(dev))
		ret = 0;
	else
		ret = wait_event_interruptible_timeout(f->wq, vgpu_file_ready(f), left);
	vgpu_want_irq(dev, -1);
	return ret < 0 ? -ERESTARTSYS : 0;
}

/* VGPU_IOC_RECEIVE, or VGPU_IOC_RECEIVE_SPIN when `spin`: the larger struct
 * starts with the plain one, and only that part is written back. */
static long vgpu_ioctl_receive(struct vgpu_file *f, void __user *argp, bool spin)
{
	struct vgpu_device *dev = f->dev;
	struct vgpu_dev_receive_spin s = { .spin_us = VGPU_SPIN_US };
	struct vgpu_dev_receive a;
	unsigned int nap_us = VGPU_POLL_MIN_US;
	ktime_t deadline = 0, spin_until;
	struct vgpu_reply *r;
	int ret;

	if (copy_from_user(&s, argp, spin ? sizeof(s) : sizeof(s.receive)))
		return -EFAULT;
	a = s.receive;
	if (a.flags || a.timeout_ms < -1 || s.spin_us > VGPU_DEV_MAX_SPIN_US || s.reserved)
		return -EINVAL;
	if (a.timeout_ms >= 0)
		deadline = ktime_add_ms(ktime_get(), a.timeout_ms);
	spin_until = ktime_add_us(ktime_get(), s.spin_us);
	for (;;) {
		r = vgpu_take_reply(f);
		if (r) {
			a.len = r->len;
			if (r->len > a.cap) {
				vgpu_put_back(f, r);
				ret = copy_to_user(argp, &a, sizeof(a)) ? -EFAULT : -EMSGSIZE;
				return ret;
			}
			if (copy_to_user(u64_to_user_ptr(a.buf), r->data, r->len) ||
			    copy_to_user(argp, &a, sizeof(a))) {
				vgpu_put_back(f, r);
				return -EFAULT;
			}
			kfree(r);
			return 0;
		}
		if (READ_ONCE(f->broken))
			return -EIO;
		if (READ_ONCE(dev->dead))
			return vgpu_dead_errno(dev);
		if (vgpu_drain(dev, false) > 0)
			continue;
		if (deadline && ktime_after(ktime_get(), deadline))
			return a.timeout_ms == 0 ? -EAGAIN : -ETIMEDOUT;
		if (ktime_before(ktime_get(), spin_until)) {
			if (signal_pending(current))
				return -ERESTARTSYS;
			cpu_relax();
			cond_resched();
			continue;
		}
		ret = vgpu_wait(f, deadline, &nap_us);
		if (ret)
			return ret;
	}
}

static long vgpu_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct vgpu_file *f = filp->private_data;
	void __user *argp = (void __user *)arg;

	switch (cmd) {
	case VGPU_IOC_INFO:
		return vgpu_ioctl_info(f, argp);
	case VGPU_IOC_SUBMIT:
		return vgpu_ioctl_submit(f, argp);
	case VGPU_IOC_RECEIVE:
		return vgpu_ioctl_receive(f, argp, false);
	case VGPU_IOC_RECEIVE_SPIN:
		return vgpu_ioctl_receive(f, argp, true);
	default:
		return -ENOTTY;
	}
}

/* The file's slot of the data area, shared with the host: offset 0, at most
 * the slot's size, MAP_SHARED. Bulk bytes go here without a copy. */
static int vgpu_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct vgpu_file *f = filp->private_data;
	struct vgpu_device *dev = f->dev;
	unsigned long size = vma->vm_end - vma->vm_start;
	phys_addr_t phys;
	int ret;

	if (vma->vm_pgoff != 0 || size > dev->slot_size || !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	/* Under files_lock: remove() cannot zap the file's mappings in between. */
	mutex_lock(&dev->files_lock);
	if (READ_ONCE(dev->dead)) {
		mutex_unlock(&dev->files_lock);
		return vgpu_dead_errno(dev);
	}
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vm_flags_clear(vma, VM_MAYEXEC);
#else
	vma->vm_flags |= VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_flags &= ~VM_MAYEXEC;
#endif
	phys = dev->shm_phys + dev->data_offset + (u64)f->slot * dev->slot_size;
	ret = remap_pfn_range(vma, vma->vm_start, PHYS_PFN(phys), size, vma->vm_page_prot);
	mutex_unlock(&dev->files_lock);
	return ret;
}

static __poll_t vgpu_poll(struct file *filp, poll_table *wait)
{
	struct vgpu_file *f = filp->private_data;
	struct vgpu_device *dev = f->dev;
	__poll_t mask = EPOLLOUT | EPOLLWRNORM;

	bool first;

	poll_wait(filp, &f->wq, wait);
	spin_lock(&f->lock);
	first = !f->polled;
	f->polled = true;
	spin_unlock(&f->lock);
	if (first) {
		/* From now on the host rings for every reply (or, without
		 * interrupts, the service work drains the ring for us). */
		vgpu_want_irq(dev, 1);
		vgpu_note_polled(dev, 1);
		if (!dev->interrupts)
			vgpu_kick_service(dev, 0);
	}
	vgpu_drain(dev, false);
	spin_lock(&f->lock);
	if (!list_empty(&f->replies))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (f->broken)
		mask |= EPOLLERR;
	spin_unlock(&f->lock);
	if (READ_ONCE(dev->dead))
		mask |= EPOLLHUP | EPOLLERR;
	return mask;
}

/* /proc/PID/fdinfo/FD shows the file's client id, by which vgpud names the
 * process's session (vgpu-smi's per-process memory). */
static void vgpu_show_fdinfo(struct seq_file *m, struct file *filp)
{
	struct vgpu_file *f = filp->private_data;

	if (f)
		seq_printf(m, "vgpu-client:\t%u\n", f->client);
}

const struct file_operations vgpu_fops = {
	.show_fdinfo = vgpu_show_fdinfo,
	.owner = THIS_MODULE,
	.open = vgpu_open,
	.release = vgpu_release,
	.unlocked_ioctl = vgpu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = vgpu_mmap,
	.poll = vgpu_poll,
	.llseek = no_llseek,
};
