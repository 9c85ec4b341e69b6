// SPDX-License-Identifier: GPL-2.0
/* vgpu guest kernel module: the PCI driver for the ivshmem device that
 * carries the VM's region, the request and reply paths every /dev/vgpu file
 * shares, and the doorbell interrupt. The file operations are in vgpu_file.c,
 * the host's liveness in vgpu_liveness.c. */
#include <linux/delay.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "vgpu_drv.h"

#define VGPU_SERVICE_POLL_MS 2
#define VGPU_ATTACH_WAIT_MS 2000

static DEFINE_MUTEX(vgpu_probe_lock);
static struct vgpu_device *vgpu_active; /* under vgpu_probe_lock: /dev/vgpu is one device */

static void vgpu_device_free(struct kref *ref)
{
	struct vgpu_device *dev = container_of(ref, struct vgpu_device, ref);

	kvfree(dev->rx_buf);
	kfree(dev);
}

void vgpu_device_put(struct vgpu_device *dev)
{
	kref_put(&dev->ref, vgpu_device_free);
}

int vgpu_dead_errno(struct vgpu_device *dev)
{
	if (READ_ONCE(dev->removed))
		return -ENODEV;
	return READ_ONCE(dev->silent) ? -EHOSTDOWN : -EPIPE;
}

void vgpu_ring_host(struct vgpu_device *dev)
{
	if (dev->interrupts)
		writel((VGPU_IVSHMEM_HOST_PEER << 16) | 0u, dev->regs + IVSHMEM_REG_DOORBELL);
}

/* Marks the device dead (lock held): every slot is free, every waiter wakes. */
void vgpu_mark_dead_locked(struct vgpu_device *dev)
{
	unsigned int i;

	if (dev->dead)
		return;
	WRITE_ONCE(dev->dead, true);
	for (i = 0; i < VGPU_VM_SLOTS; i++) {
		struct vgpu_slot *s = &dev->slots[i];

		if (s->state == VGPU_SLOT_OPEN)
			wake_up_all(&s->file->wq);
		else if (s->state == VGPU_SLOT_DRAINING)
			dev->wanted_irqs--;
		if (s->state != VGPU_SLOT_OPEN)
			s->state = VGPU_SLOT_FREE;
	}
	wake_up_all(&dev->tx_wq);
	wake_up_all(&dev->slot_wq);
}

static void vgpu_mark_dead(struct vgpu_device *dev, const char *why)
{
	bool was;

	spin_lock(&dev->lock);
	was = dev->dead;
	vgpu_mark_dead_locked(dev);
	spin_unlock(&dev->lock);
	if (!was && why)
		dev_warn(&dev->pdev->dev, "%s: every /dev/vgpu call now fails\n", why);
}

/* rx_lock held. */
static bool vgpu_host_closed(struct vgpu_device *dev)
{
	if (smp_load_acquire(&dev->hdr->host_state) != VGPU_HOST_CLOSED)
		return false;
	vgpu_mark_dead(dev, "the host closed this VM's channel");
	return true;
}

/* The response ring's consumer_waiting is the VM's: the host rings while any
 * file sleeps, any slot waits for its Goodbye reply, or any file uses poll().
 * rx_lock held (the flag is written only under it). */
void vgpu_publish_irq_wish(struct vgpu_device *dev)
{
	bool want;

	if (!dev->interrupts || READ_ONCE(dev->dead))
		return;
	spin_lock(&dev->lock);
	want = dev->wanted_irqs > 0;
	spin_unlock(&dev->lock);
	vgpu_ring_set_consumer_waiting(&dev->resp, want);
}

void vgpu_want_irq(struct vgpu_device *dev, int delta)
{
	spin_lock(&dev->lock);
	dev->wanted_irqs += delta;
	spin_unlock(&dev->lock);
	mutex_lock(&dev->rx_lock);
	vgpu_publish_irq_wish(dev);
	mutex_unlock(&dev->rx_lock);
}

int vgpu_send(struct vgpu_device *dev, const void *msg, u32 len, bool may_wait)
{
	int ret;

	if (may_wait) {
		if (mutex_lock_interruptible(&dev->tx_lock))
			return -ERESTARTSYS;
	} else {
		mutex_lock(&dev->tx_lock);
	}
	for (;;) {
		if (READ_ONCE(dev->dead)) {
			ret = vgpu_dead_errno(dev);
			break;
		}
		ret = vgpu_ring_write(&dev->req, msg, len);
		if (ret == 0) {
			if (vgpu_ring_consumer_waiting(&dev->req))
				vgpu_ring_host(dev);
			break;
		}
		if (ret != -ENOSPC) {
			mutex_unlock(&dev->tx_lock);
			vgpu_mark_dead(dev, "the host broke the request ring");
			return -EPIPE;
		}
		/* Full: ask the host to ring us once it has made room. */
		vgpu_ring_set_producer_waiting(&dev->req, true);
		if (!vgpu_ring_has_room(&dev->req, len)) {
			if (vgpu_ring_consumer_waiting(&dev->req))
				vgpu_ring_host(dev);
			if (!may_wait) {
				vgpu_ring_set_producer_waiting(&dev->req, false);
				ret = -EAGAIN;
				break;
			}
			/* The host reads no more requests while the VM's replies wait
			 * unread: move them to their files' queues (a file that lets
			 * too many pile up loses them, not the others), or a sender
			 * that nobody reads for would wait forever. */
			vgpu_drain(dev, false);
			ret = wait_event_interruptible_timeout(
				dev->tx_wq, READ_ONCE(dev->dead) || vgpu_ring_has_room(&dev->req, len),
				dev->interrupts ? HZ / 10 : 1);
			if (ret < 0) {
				vgpu_ring_set_producer_waiting(&dev->req, false);
				break;
			}
		}
		vgpu_ring_set_producer_waiting(&dev->req, false);
	}
	mutex_unlock(&dev->tx_lock);
	return ret;
}

/* Hands one reply to the file (or the slot) its client names. */
static void vgpu_route(struct vgpu_device *dev, const u8 *msg, u32 len)
{
	const struct vgpu_msg_header *h = (const struct vgpu_msg_header *)msg;
	u32 slot_index = VGPU_VM_CLIENT_SLOT(h->client);
	struct vgpu_reply *reply = NULL;
	struct vgpu_slot *slot;
	struct vgpu_file *f;

	if (h->client == VGPU_VM_KERNEL_CLIENT || slot_index >= VGPU_VM_SLOTS)
		return; /* the host's answer to the attach Goodbye, or nobody's */
	reply = kmalloc(struct_size(reply, data, len), GFP_KERNEL);

	spin_lock(&dev->lock);
	slot = &dev->slots[slot_index];
	if (slot->client != h->client || slot->state == VGPU_SLOT_FREE)
		goto drop; /* a late reply to a process that is gone */
	if (slot->state == VGPU_SLOT_DRAINING) {
		if (h->opcode == VGPU_OP_GOODBYE && h->request_id == VGPU_KMOD_GOODBYE_ID) {
			slot->state = VGPU_SLOT_FREE; /* the host released it all */
			dev->wanted_irqs--;
			wake_up_all(&dev->slot_wq);
		}
		goto drop;
	}
	if (slot->state != VGPU_SLOT_OPEN)
		goto drop;
	f = slot->file;
	spin_lock(&f->lock);
	if (!reply || f->broken || f->queued + len > VGPU_DEV_MAX_QUEUED) {
		if (!f->broken)
			dev_warn_ratelimited(&dev->pdev->dev,
					     "client %#x lost a reply (%zu bytes unread)\n",
					     f->client, f->queued);
		f->broken = true;
		spin_unlock(&f->lock);
		wake_up_all(&f->wq);
		goto drop;
	}
	reply->len = len;
	memcpy(reply->data, msg, len);
	list_add_tail(&reply->node, &f->replies);
	f->queued += len;
	spin_unlock(&f->lock);
	spin_unlock(&dev->lock);
	wake_up_all(&f->wq);
	return;
drop:
	spin_unlock(&dev->lock);
	kfree(reply);
}

int vgpu_drain(struct vgpu_device *dev, bool block)
{
	int count = 0, ret;
	u32 len;

	if (block)
		mutex_lock(&dev->rx_lock);
	else if (!mutex_trylock(&dev->rx_lock))
		return 0;
	while (!READ_ONCE(dev->dead)) {
		ret = vgpu_ring_read(&dev->resp, dev->rx_buf, &len);
		if (ret == 0) {
			vgpu_host_closed(dev);
			break;
		}
		if (ret < 0) {
			vgpu_mark_dead(dev, "the host broke the reply ring");
			break;
		}
		vgpu_route(dev, dev->rx_buf, len);
		count++;
	}
	if (count && !READ_ONCE(dev->dead) && vgpu_ring_producer_waiting(&dev->resp))
		vgpu_ring_host(dev); /* the host waits for room to write replies */
	if (count)
		vgpu_publish_irq_wish(dev); /* a slot's Goodbye reply may have come */
	mutex_unlock(&dev->rx_lock);
	return count;
}

bool vgpu_replies_pending(struct vgpu_device *dev)
{
	bool pending;

	mutex_lock(&dev->rx_lock);
	pending = !READ_ONCE(dev->dead) && !vgpu_ring_empty(&dev->resp);
	mutex_unlock(&dev->rx_lock);
	return pending;
}

void vgpu_kick_service(struct vgpu_device *dev, unsigned long delay)
{
	spin_lock(&dev->lock);
	if (!dev->dead)
		mod_delayed_work(system_wq, &dev->service, delay);
	spin_unlock(&dev->lock);
}

static int vgpu_send_goodbye(struct vgpu_device *dev, u32 client, bool may_wait)
{
	struct {
		struct vgpu_msg_header h;
		u64 reserved;
	} msg = {
		.h = {
			.magic = VGPU_MSG_MAGIC,
			.version = VGPU_PROTOCOL_VERSION,
			.opcode = VGPU_OP_GOODBYE,
			.request_id = VGPU_KMOD_GOODBYE_ID,
			.payload_len = VGPU_GOODBYE_PAYLOAD,
			.client = client,
		},
	};

	BUILD_BUG_ON(sizeof(msg) != VGPU_MSG_HEADER_SIZE + VGPU_GOODBYE_PAYLOAD);
	return vgpu_send(dev, &msg, sizeof(msg), may_wait);
}

/* Sends the Goodbyes released files owe; with interrupts off, also drains the
 * reply ring for files that poll() and slots waiting for a Goodbye reply. */
static void vgpu_service(struct work_struct *work)
{
	struct vgpu_device *dev = container_of(to_delayed_work(work), struct vgpu_device, service);
	bool again = false;
	unsigned int i;

	for (i = 0; i < VGPU_VM_SLOTS; i++) {
		struct vgpu_slot *s = &dev->slots[i];
		u32 client;
		int ret;

		spin_lock(&dev->lock);
		if (dev->dead || s->state != VGPU_SLOT_GOODBYE) {
			spin_unlock(&dev->lock);
			continue;
		}
		/* DRAINING before the write: its reply may come at once. */
		s->state = VGPU_SLOT_DRAINING;
		dev->wanted_irqs++;
		client = s->client;
		spin_unlock(&dev->lock);
		if (dev->interrupts)
			vgpu_want_irq(dev, 0); /* publish the flag before the host answers */
		ret = vgpu_send_goodbye(dev, client, false);
		if (ret == -EAGAIN) {
			spin_lock(&dev->lock);
			if (s->state == VGPU_SLOT_DRAINING) {
				s->state = VGPU_SLOT_GOODBYE;
				dev->wanted_irqs--;
			}
			spin_unlock(&dev->lock);
			again = true;
		}
	}
	if (!dev->interrupts) {
		vgpu_drain(dev, true);
		spin_lock(&dev->lock);
		again = again || dev->wanted_irqs > 0;
		spin_unlock(&dev->lock);
	}
	if (again)
		vgpu_kick_service(dev, msecs_to_jiffies(VGPU_SERVICE_POLL_MS));
}

static irqreturn_t vgpu_irq_thread(int irq, void *data)
{
	struct vgpu_device *dev = data;
	bool owed = false;
	unsigned int i;

	vgpu_drain(dev, true);
	wake_up_all(&dev->tx_wq); /* the host may have made room for requests */
	spin_lock(&dev->lock);
	for (i = 0; i < VGPU_VM_SLOTS; i++)
		owed = owed || dev->slots[i].state == VGPU_SLOT_GOODBYE;
	spin_unlock(&dev->lock);
	if (owed)
		vgpu_kick_service(dev, 0);
	return IRQ_HANDLED;
}

/* Copies and checks the geometry the host wrote; nothing else is trusted. */
static int vgpu_check_region(struct vgpu_device *dev)
{
	struct vgpu_region_header *h = dev->hdr;
	u64 region_size, req_off, resp_off, data_off, data_size, data_end;
	u32 ring;

	if (smp_load_acquire(&h->magic) != VGPU_REGION_MAGIC)
		return -ENODEV; /* not a vgpu region: some other use of ivshmem */
	region_size = READ_ONCE(h->region_size);
	ring = READ_ONCE(h->ring_size);
	req_off = READ_ONCE(h->req_ring_offset);
	resp_off = READ_ONCE(h->resp_ring_offset);
	data_off = READ_ONCE(h->data_offset);
	data_size = READ_ONCE(h->data_size);
	if (READ_ONCE(h->version) != VGPU_REGION_VERSION ||
	    READ_ONCE(h->max_message) != VGPU_MSG_MAX_SIZE)
		return -EPROTO;
	if (region_size > dev->shm_len || region_size < VGPU_REGION_HEADER_SIZE)
		return -EINVAL;
	if (!is_power_of_2(ring) || ring < 2 * VGPU_MSG_MAX_SIZE || ring > (1u << 30))
		return -EINVAL;
	if (req_off != VGPU_REGION_HEADER_SIZE || resp_off != req_off + ring ||
	    data_off != resp_off + ring || !IS_ALIGNED(data_off, PAGE_SIZE) ||
	    !IS_ALIGNED(data_size, VGPU_VM_SLOT_ALIGN))
		return -EINVAL;
	if (check_add_overflow(data_off, data_size, &data_end) || data_end > region_size)
		return -EINVAL;
	if (VGPU_VM_SLOT_SIZE(data_size) < VGPU_VM_MIN_SLOT ||
	    !IS_ALIGNED(VGPU_VM_SLOT_SIZE(data_size), PAGE_SIZE))
		return -EINVAL;
	dev->data_offset = data_off;
	dev->data_size = data_size;
	dev->slot_size = VGPU_VM_SLOT_SIZE(data_size);
	vgpu_ring_init_writer(&dev->req, &h->req, dev->shm + req_off, ring);
	vgpu_ring_init_reader(&dev->resp, &h->resp, dev->shm + resp_off, ring);
	return 0;
}

static int vgpu_setup_interrupts(struct vgpu_device *dev)
{
	struct pci_dev *pdev = dev->pdev;
	int ret;

	if (pci_msix_vec_count(pdev) <= 0)
		return 0; /* ivshmem-plain: no doorbells, both sides poll */
	ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSIX);
	if (ret < 0)
		return ret;
	dev->irq = pci_irq_vector(pdev, 0);
	ret = request_threaded_irq(dev->irq, NULL, vgpu_irq_thread, IRQF_ONESHOT, "vgpu", dev);
	if (ret) {
		pci_free_irq_vectors(pdev);
		return ret;
	}
	dev->interrupts = true;
	dev->peer_id = readl(dev->regs + IVSHMEM_REG_IV_POSITION);
	return 0;
}

/* Tells the host the guest kernel (re)attached: whatever the VM's processes
 * held before (a reboot, a module reload) is released. Written before any
 * process can submit, so it precedes every request of this attachment. */
int vgpu_attach(struct vgpu_device *dev)
{
	unsigned int waited;
	int ret;

	for (waited = 0;; waited += 10) {
		ret = vgpu_send_goodbye(dev, VGPU_VM_KERNEL_CLIENT, false);
		if (ret != -EAGAIN || waited >= VGPU_ATTACH_WAIT_MS)
			return ret;
		msleep(10);
	}
}

static int vgpu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct vgpu_device *dev;
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, BIT(0), "vgpu");
	if (ret)
		return ret;
	ret = pci_request_region(pdev, 2, "vgpu");
	if (ret)
		return ret;
	pci_set_master(pdev); /* MSI-X writes are bus-master writes */

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	kref_init(&dev->ref);
	dev->pdev = pdev;
	mutex_init(&dev->tx_lock);
	mutex_init(&dev->rx_lock);
	mutex_init(&dev->files_lock);
	spin_lock_init(&dev->lock);
	init_waitqueue_head(&dev->tx_wq);
	init_waitqueue_head(&dev->slot_wq);
	INIT_DELAYED_WORK(&dev->service, vgpu_service);
	INIT_DELAYED_WORK(&dev->watchdog, vgpu_watchdog);
	dev->rx_buf = kvmalloc(VGPU_MSG_MAX_SIZE, GFP_KERNEL);
	if (!dev->rx_buf) {
		ret = -ENOMEM;
		goto err_free;
	}
	dev->regs = pcim_iomap_table(pdev)[0];
	dev->shm_phys = pci_resource_start(pdev, 2);
	dev->shm_len = pci_resource_len(pdev, 2);
	if (dev->shm_len < VGPU_REGION_HEADER_SIZE) {
		ret = -ENODEV;
		goto err_free;
	}
	dev->shm = devm_memremap(&pdev->dev, dev->shm_phys, dev->shm_len, MEMREMAP_WB);
	if (IS_ERR(dev->shm)) {
		ret = PTR_ERR(dev->shm);
		goto err_free;
	}
	dev->hdr = (struct vgpu_region_header *)dev->shm;
	ret = vgpu_check_region(dev);
	if (ret) {
		dev_err(&pdev->dev, "BAR2 holds no usable vgpu region (%d): not driving it\n", ret);
		goto err_free;
	}

	mutex_lock(&vgpu_probe_lock);
	if (vgpu_active) {
		mutex_unlock(&vgpu_probe_lock);
		dev_err(&pdev->dev, "a vgpu device is already driven: /dev/vgpu is one device\n");
		ret = -EBUSY;
		goto err_free;
	}
	ret = vgpu_setup_interrupts(dev);
	if (ret)
		goto err_unlock;
	if (smp_load_acquire(&dev->hdr->host_state) == VGPU_HOST_CLOSED) {
		dev_warn(&pdev->dev, "the host has closed this VM's channel\n");
		dev->dead = true;
	} else {
		ret = vgpu_attach(dev);
		if (ret) {
			dev_err(&pdev->dev, "the host does not read the request ring (%d)\n", ret);
			goto err_irq;
		}
	}
	dev->misc.minor = MISC_DYNAMIC_MINOR;
	dev->misc.name = "vgpu";
	dev->misc.fops = &vgpu_fops;
	dev->misc.parent = &pdev->dev;
	dev->misc.mode = 0666; /* every user of the VM may use the GPU */
	ret = misc_register(&dev->misc);
	if (ret)
		goto err_irq;
	dev->misc_registered = true;
	vgpu_active = dev;
	mutex_unlock(&vgpu_probe_lock);
	pci_set_drvdata(pdev, dev);
	dev_info(&pdev->dev,
		 "vgpu region %llu MiB: %u slots of %llu KiB, %s (peer %u)\n",
		 (unsigned long long)(dev->shm_len >> 20), VGPU_VM_SLOTS,
		 (unsigned long long)(dev->slot_size >> 10),
		 dev->interrupts ? "doorbell interrupts" : "polling", dev->peer_id);
	return 0;

err_irq:
	if (dev->interrupts) {
		free_irq(dev->irq, dev);
		pci_free_irq_vectors(pdev);
	}
err_unlock:
	mutex_unlock(&vgpu_probe_lock);
err_free:
	vgpu_device_put(dev);
	return ret;
}

static void vgpu_remove(struct pci_dev *pdev)
{
	struct vgpu_device *dev = pci_get_drvdata(pdev);
	unsigned int i;

	mutex_lock(&vgpu_probe_lock);
	vgpu_active = NULL;
	mutex_unlock(&vgpu_probe_lock);
	misc_deregister(&dev->misc); /* no new opens */

	/* Goodbyes still owed go out now if the ring has room. */
	cancel_delayed_work_sync(&dev->service);
	for (i = 0; i < VGPU_VM_SLOTS; i++) {
		struct vgpu_slot *s = &dev->slots[i];
		bool owed;

		spin_lock(&dev->lock);
		owed = !dev->dead && s->state == VGPU_SLOT_GOODBYE;
		spin_unlock(&dev->lock);
		if (owed)
			vgpu_send_goodbye(dev, s->client, false);
	}

	mutex_lock(&dev->files_lock);
	spin_lock(&dev->lock);
	WRITE_ONCE(dev->removed, true);
	vgpu_mark_dead_locked(dev);
	spin_unlock(&dev->lock);
	/* Files still open (hot unplug) lose their mappings of the slot. */
	for (i = 0; i < VGPU_VM_SLOTS; i++) {
		if (dev->slots[i].state == VGPU_SLOT_OPEN)
			unmap_mapping_range(dev->slots[i].file->filp->f_mapping, 0, 0, 1);
	}
	mutex_unlock(&dev->files_lock);
	cancel_delayed_work_sync(&dev->service);
	cancel_delayed_work_sync(&dev->watchdog); /* dead: it cannot arm again */
	/* Wait out anyone inside the ring code; they see dead from now on. */
	mutex_lock(&dev->rx_lock);
	mutex_unlock(&dev->rx_lock);
	mutex_lock(&dev->tx_lock);
	mutex_unlock(&dev->tx_lock);
	if (dev->interrupts) {
		free_irq(dev->irq, dev);
		pci_free_irq_vectors(pdev);
	}
	pci_set_drvdata(pdev, NULL);
	vgpu_device_put(dev); /* open files keep it until they close */
}

static const struct pci_device_id vgpu_ids[] = {
	{ PCI_DEVICE(0x1af4, 0x1110) }, /* QEMU ivshmem (plain and doorbell) */
	{ 0 }
};
MODULE_DEVICE_TABLE(pci, vgpu_ids);

static struct pci_driver vgpu_driver = {
	.name = "vgpu",
	.id_table = vgpu_ids,
	.probe = vgpu_probe,
	.remove = vgpu_remove,
};
module_pci_driver(vgpu_driver);

MODULE_DESCRIPTION("vgpu: the VM's side of the shared-GPU ring over ivshmem (/dev/vgpu)");
MODULE_AUTHOR("vgpu");
MODULE_LICENSE("GPL");
