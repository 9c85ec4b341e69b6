// SPDX-License-Identifier: GPL-2.0
/* vgpu guest kernel module: is the host alive? While callers wait for
 * replies (or files use poll()), the watchdog rings the host every second
 * and reads its heartbeat; a heartbeat that stands still for
 * VGPU_HOST_SILENT_CHECKS looks makes the device dead for silence, and one
 * that moves again revives it (docs/kernel-module.md). */
#include <linux/jiffies.h>
#include <linux/workqueue.h>

#include "vgpu_drv.h"

#define VGPU_WATCHDOG_MS 1000    /* a look at the host's heartbeat while callers wait */
#define VGPU_HOST_SILENT_CHECKS 5 /* looks without a beat before the host counts as gone */

/* The host's heartbeat stood still: dead, but revived if it moves again. */
static void vgpu_mark_silent(struct vgpu_device *dev)
{
	bool was;

	spin_lock(&dev->lock);
	was = dev->dead;
	if (!was && !dev->removed)
		WRITE_ONCE(dev->silent, true);
	vgpu_mark_dead_locked(dev);
	spin_unlock(&dev->lock);
	if (!was)
		dev_warn(&dev->pdev->dev,
			 "the host stopped answering (its heartbeat stood still for 5 s): every "
			 "/dev/vgpu call now fails, until it answers again\n");
}

/* dev->lock held. A no-op while armed. */
static void vgpu_arm_watchdog_locked(struct vgpu_device *dev)
{
	if (!dev->dead || (dev->silent && !dev->removed))
		queue_delayed_work(system_wq, &dev->watchdog, msecs_to_jiffies(VGPU_WATCHDOG_MS));
}

void vgpu_note_wait(struct vgpu_device *dev)
{
	spin_lock(&dev->lock);
	dev->last_wait = jiffies;
	vgpu_arm_watchdog_locked(dev);
	spin_unlock(&dev->lock);
}

void vgpu_note_polled(struct vgpu_device *dev, int delta)
{
	spin_lock(&dev->lock);
	dev->polled_files += delta;
	if (delta > 0)
		vgpu_arm_watchdog_locked(dev);
	spin_unlock(&dev->lock);
}

/* The host answers again after a silence. The files open through it lost
 * their work on the host: they stay failing (-EIO) until closed. New files
 * work. The attach Goodbye releases everything the VM's processes held, and
 * (under files_lock) precedes every request of the new files. */
static void vgpu_revive(struct vgpu_device *dev, u64 beat)
{
	unsigned int i;
	int ret;

	mutex_lock(&dev->files_lock);
	spin_lock(&dev->lock);
	if (!dev->dead || !dev->silent || dev->removed) {
		spin_unlock(&dev->lock);
		mutex_unlock(&dev->files_lock);
		return;
	}
	for (i = 0; i < VGPU_VM_SLOTS; i++) {
		struct vgpu_file *f = dev->slots[i].file;

		if (dev->slots[i].state != VGPU_SLOT_OPEN)
			continue;
		spin_lock(&f->lock);
		f->broken = true;
		spin_unlock(&f->lock);
	}
	WRITE_ONCE(dev->silent, false);
	WRITE_ONCE(dev->dead, false);
	dev->seen_heartbeat = beat;
	dev->silent_checks = 0;
	spin_unlock(&dev->lock);
	ret = vgpu_attach(dev);
	mutex_unlock(&dev->files_lock);
	if (ret) {
		vgpu_mark_silent(dev); /* it does not read the ring after all */
		spin_lock(&dev->lock);
		vgpu_arm_watchdog_locked(dev);
		spin_unlock(&dev->lock);
		return;
	}
	vgpu_want_irq(dev, 0); /* the wish was not published while dead */
	dev_info(&dev->pdev->dev,
		 "the host answers again: new processes may use /dev/vgpu (files open before "
		 "fail until closed)\n");
}

/* The device is dead for silence. A heartbeat that moves again means the
 * host was only stopped (SIGSTOP, a debugger, swapped out): revive. A host
 * killed outright never beats again, and one that closes the channel is
 * gone for good. Rings each time: an idle live host beats only when it
 * looks for events. remove() sets removed before it waits for this work to
 * end and unmaps the BARs after, so reading them here is safe. */
static void vgpu_watch_silent_host(struct vgpu_device *dev)
{
	bool moved;
	u64 beat;
	u32 state;

	if (READ_ONCE(dev->removed))
		return;
	mutex_lock(&dev->rx_lock);
	beat = READ_ONCE(dev->hdr->host_heartbeat);
	state = smp_load_acquire(&dev->hdr->host_state);
	mutex_unlock(&dev->rx_lock);
	if (state == VGPU_HOST_CLOSED) {
		spin_lock(&dev->lock);
		WRITE_ONCE(dev->silent, false);
		spin_unlock(&dev->lock);
		dev_warn(&dev->pdev->dev, "the host closed this VM's channel\n");
		return;
	}
	spin_lock(&dev->lock);
	moved = beat != dev->seen_heartbeat;
	spin_unlock(&dev->lock);
	if (moved) {
		vgpu_revive(dev, beat);
		return;
	}
	mutex_lock(&dev->tx_lock);
	vgpu_ring_host(dev);
	mutex_unlock(&dev->tx_lock);
	spin_lock(&dev->lock);
	vgpu_arm_watchdog_locked(dev);
	spin_unlock(&dev->lock);
}

/* A host killed outright cannot close the channel (host_state stays READY)
 * and QEMU tells the guest nothing: without this, callers would wait for
 * their replies until the VM restarts. A live host's loop beats each time
 * it looks for events, and looks when rung, so a heartbeat that stands still
 * through several rings a second apart means the host is gone. */
void vgpu_watchdog(struct work_struct *work)
{
	struct vgpu_device *dev = container_of(to_delayed_work(work), struct vgpu_device, watchdog);
	bool waiting, silent = false;
	u64 beat;

	if (READ_ONCE(dev->dead)) {
		if (READ_ONCE(dev->silent))
			vgpu_watch_silent_host(dev);
		return;
	}
	mutex_lock(&dev->rx_lock);
	if (READ_ONCE(dev->dead)) {
		mutex_unlock(&dev->rx_lock);
		return;
	}
	beat = READ_ONCE(dev->hdr->host_heartbeat);
	mutex_unlock(&dev->rx_lock);

	spin_lock(&dev->lock);
	waiting = time_before(jiffies, dev->last_wait + 2 * msecs_to_jiffies(VGPU_WATCHDOG_MS)) ||
		  dev->polled_files > 0;
	if (beat != dev->seen_heartbeat || !waiting) {
		dev->seen_heartbeat = beat;
		dev->silent_checks = 0;
	} else {
		silent = ++dev->silent_checks >= VGPU_HOST_SILENT_CHECKS;
	}
	spin_unlock(&dev->lock);
	if (silent) {
		vgpu_mark_silent(dev);
		spin_lock(&dev->lock);
		vgpu_arm_watchdog_locked(dev); /* now watching for the host's return */
		spin_unlock(&dev->lock);
		return;
	}
	if (!waiting)
		return; /* nobody waits: the next caller to sleep arms it again */
	mutex_lock(&dev->tx_lock);
	if (!READ_ONCE(dev->dead))
		vgpu_ring_host(dev); /* a live host wakes and beats */
	mutex_unlock(&dev->tx_lock);
	spin_lock(&dev->lock);
	vgpu_arm_watchdog_locked(dev);
	spin_unlock(&dev->lock);
}
