/* vgpu_abi_test: runs inside the test guest against /dev/vgpu and the host's
 * vgpud. Checks the module's user-space interface (vgpu_dev.h): malformed
 * ioctls are refused with the documented errno, a valid request is stamped
 * with the file's client and its reply reaches that file only, mmap takes the
 * file's slot only, poll and signals behave. Prints "ok <check>" per check
 * and ends with "PASS vgpu_abi" (exit 0) or "FAIL vgpu_abi: <why>" (exit 1).
 * With --await-hangup it only waits in poll() for the host to go (below). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include "vgpu/protocol/vm_region.h"
#include "vgpu/transport/vgpu_dev.h"

#define OP_GET_DEVICE_COUNT 0x0100u

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("FAIL vgpu_abi: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	exit(1);
}

static void ok(const char *what) { printf("ok   %s\n", what); }

/* The ioctl must fail with `want`. */
static void expect_errno(int ret, int want, const char *what)
{
	if (ret == 0)
		fail("%s: succeeded, expected %s", what, strerror(want));
	if (errno != want)
		fail("%s: %s, expected %s", what, strerror(errno), strerror(want));
	ok(what);
}

struct request {
	struct vgpu_msg_header h;
	uint64_t reserved;
};

static struct request make_request(uint64_t id)
{
	struct request r;

	memset(&r, 0, sizeof(r));
	r.h.magic = VGPU_MSG_MAGIC;
	r.h.version = VGPU_PROTOCOL_VERSION;
	r.h.opcode = OP_GET_DEVICE_COUNT;
	r.h.request_id = id;
	r.h.payload_len = sizeof(r.reserved);
	return r;
}

static int submit(int fd, const void *msg, uint32_t len)
{
	struct vgpu_dev_submit s = { .msg = (uintptr_t)msg, .len = len };

	return ioctl(fd, VGPU_IOC_SUBMIT, &s);
}

static int receive(int fd, void *buf, uint32_t cap, int timeout_ms, uint32_t *len)
{
	struct vgpu_dev_receive r = { .buf = (uintptr_t)buf, .cap = cap, .timeout_ms = timeout_ms };
	int ret = ioctl(fd, VGPU_IOC_RECEIVE, &r);

	*len = r.len;
	return ret;
}

/* VGPU_IOC_RECEIVE_SPIN: the same, polling `spin_us` before sleeping. */
static int receive_spin(int fd, void *buf, uint32_t cap, int timeout_ms, uint32_t spin_us,
			uint32_t reserved, uint32_t *len)
{
	struct vgpu_dev_receive_spin r = {
		.receive = { .buf = (uintptr_t)buf, .cap = cap, .timeout_ms = timeout_ms },
		.spin_us = spin_us,
		.reserved = reserved,
	};
	int ret = ioctl(fd, VGPU_IOC_RECEIVE_SPIN, &r);

	*len = r.receive.len;
	if (r.spin_us != spin_us || r.reserved != reserved)
		fail("VGPU_IOC_RECEIVE_SPIN wrote past the plain receive struct");
	return ret;
}

static void on_alarm(int sig) { (void)sig; }

/* A process that queues requests without reading replies: once the reply ring
 * is full the host reads no more, the request ring fills, and a NOWAIT submit
 * says EAGAIN instead of waiting forever. Every request written is answered. */
/* NOWAIT submits never wait: each is either written (and answered once) or
 * refused with EAGAIN with nothing written. The burst stays well under
 * VGPU_DEV_MAX_QUEUED of replies: the module takes every reply off the ring
 * as it comes, so a host as fast as this guest never lets the ring fill, and
 * EAGAIN shows only when the host is slower (counted, not required). */
static void submit_nowait(int fd, const struct vgpu_dev_info *info)
{
	const unsigned long burst = VGPU_DEV_MAX_QUEUED / 4096;
	uint8_t reply[VGPU_MSG_MAX_SIZE];
	unsigned long sent = 0, refused = 0, answered = 0, i;
	uint32_t len;

	if (!(info->flags & VGPU_DEV_INFO_SUBMIT_NOWAIT))
		fail("VGPU_IOC_INFO: no VGPU_DEV_INFO_SUBMIT_NOWAIT (flags %#x)", info->flags);
	for (i = 0; i < burst; i++) {
		struct request r = make_request(1000 + sent);
		struct vgpu_dev_submit s = { .msg = (uintptr_t)&r, .len = sizeof(r),
					     .flags = VGPU_DEV_SUBMIT_NOWAIT };

		if (ioctl(fd, VGPU_IOC_SUBMIT, &s) == 0) {
			sent++;
			continue;
		}
		if (errno != EAGAIN)
			fail("NOWAIT submit %lu: %s, expected success or EAGAIN", i + 1, strerror(errno));
		refused++;
	}
	while (answered < sent) {
		struct vgpu_msg_header rh;

		if (receive(fd, reply, sizeof(reply), 5000, &len) != 0)
			fail("NOWAIT: reply %lu of %lu: %s", answered + 1, sent, strerror(errno));
		memcpy(&rh, reply, sizeof(rh));
		if (rh.request_id != 1000 + answered)
			fail("NOWAIT: reply %lu answers request %llu", answered + 1,
			     (unsigned long long)rh.request_id - 1000);
		answered++;
	}
	printf("NOWAIT: %lu requests written, %lu refused with EAGAIN\n", sent, refused);
	expect_errno(receive(fd, reply, sizeof(reply), 0, &len), EAGAIN,
		     "NOWAIT submit: no wait, each written request answered once, in order");
}

/* vgpu_abi --await-hangup SECONDS: opens /dev/vgpu, prints "awaiting", and
 * waits in poll() alone (no other caller waits) until the module reports the
 * host gone: PASS once poll() returns POLLHUP, FAIL on anything else or after
 * SECONDS. The host test kills vgpud meanwhile. */
static int await_hangup(int seconds)
{
	struct pollfd p;
	int fd, n;

	fd = open(VGPU_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		fail("open %s: %s", VGPU_DEV_PATH, strerror(errno));
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	n = poll(&p, 1, 0); /* registers the file as polled before the host goes */
	printf("awaiting\n");
	if (n == 0)
		n = poll(&p, 1, seconds * 1000);
	if (n < 0)
		fail("poll: %s", strerror(errno));
	if (n == 0)
		fail("poll: no hang-up within %d s of waiting", seconds);
	if (!(p.revents & POLLHUP))
		fail("poll: revents %#x, expected POLLHUP", p.revents);
	close(fd);
	printf("PASS vgpu_abi_hangup\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct vgpu_dev_info info, info2;
	struct request req = make_request(7), bad;
	uint8_t reply[VGPU_MSG_MAX_SIZE];
	struct vgpu_msg_header rh;
	uint32_t len = 0;
	int fd, fd2;
	void *slot;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "--await-hangup") == 0)
		return await_hangup(atoi(argv[2]));
	fd = open(VGPU_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		fail("open %s: %s", VGPU_DEV_PATH, strerror(errno));
	if (ioctl(fd, VGPU_IOC_INFO, &info) != 0)
		fail("VGPU_IOC_INFO: %s", strerror(errno));
	if (info.abi_version != VGPU_DEV_ABI_VERSION || info.max_message != VGPU_MSG_MAX_SIZE ||
	    info.slot_size == 0 || info.client == 0 || VGPU_VM_CLIENT_SLOT(info.client) >= VGPU_VM_SLOTS)
		fail("VGPU_IOC_INFO: abi %u, slot %llu, client %#x", info.abi_version,
		     (unsigned long long)info.slot_size, info.client);
	printf("info: client %#x, slot %llu KiB, %s\n", info.client,
	       (unsigned long long)info.slot_size >> 10,
	       (info.flags & VGPU_DEV_INFO_INTERRUPTS) ? "interrupts" : "polling");
	ok("VGPU_IOC_INFO");

	expect_errno(ioctl(fd, _IO(VGPU_IOC_MAGIC, 99)), ENOTTY, "unknown ioctl: ENOTTY");
	expect_errno(ioctl(fd, VGPU_IOC_INFO, (void *)8), EFAULT, "INFO to a bad pointer: EFAULT");
	expect_errno(submit(fd, &req, 16), EINVAL, "submit shorter than a header: EINVAL");
	expect_errno(submit(fd, &req, VGPU_MSG_MAX_SIZE + 8), EINVAL, "submit over the maximum: EINVAL");
	{
		struct vgpu_dev_submit s = { .msg = (uintptr_t)&req, .len = sizeof(req), .flags = 2 };

		expect_errno(ioctl(fd, VGPU_IOC_SUBMIT, &s), EINVAL, "submit with unknown flags: EINVAL");
	}
	expect_errno(submit(fd, (void *)16, sizeof(req)), EFAULT, "submit from a bad pointer: EFAULT");
	bad = req;
	bad.h.magic = 0;
	expect_errno(submit(fd, &bad, sizeof(bad)), EINVAL, "bad magic: EINVAL");
	bad = req;
	bad.h.client = 5;
	expect_errno(submit(fd, &bad, sizeof(bad)), EINVAL, "a client chosen by user space: EINVAL");
	bad = req;
	bad.h.opcode = VGPU_OP_GOODBYE;
	expect_errno(submit(fd, &bad, sizeof(bad)), EINVAL, "Goodbye from user space: EINVAL");
	bad = req;
	bad.h.payload_len = 16;
	expect_errno(submit(fd, &bad, sizeof(bad)), EINVAL, "payload_len not matching len: EINVAL");
	bad = req;
	bad.h.flags = VGPU_MSG_REPLY;
	expect_errno(submit(fd, &bad, sizeof(bad)), EINVAL, "a reply from user space: EINVAL");
	bad = req;
	bad.h.opcode = VGPU_OP_PAD;
	expect_errno(submit(fd, &bad, sizeof(bad)), EINVAL, "ring padding from user space: EINVAL");

	expect_errno(receive(fd, reply, sizeof(reply), 0, &len), EAGAIN, "receive, nothing queued: EAGAIN");
	expect_errno(receive(fd, reply, sizeof(reply), 100, &len), ETIMEDOUT,
		     "receive, 100 ms: ETIMEDOUT");
	expect_errno(receive(fd, reply, sizeof(reply), -2, &len), EINVAL, "receive timeout -2: EINVAL");
	{
		struct vgpu_dev_receive r = { .buf = (uintptr_t)reply, .cap = sizeof(reply), .flags = 2 };

		expect_errno(ioctl(fd, VGPU_IOC_RECEIVE, &r), EINVAL, "receive with flags: EINVAL");
	}
	if (!(info.flags & VGPU_DEV_INFO_RECEIVE_SPIN))
		fail("VGPU_IOC_INFO: no VGPU_DEV_INFO_RECEIVE_SPIN (flags %#x)", info.flags);
	expect_errno(receive_spin(fd, reply, sizeof(reply), 0, VGPU_DEV_MAX_SPIN_US + 1, 0, &len),
		     EINVAL, "receive, spin over the maximum: EINVAL");
	expect_errno(receive_spin(fd, reply, sizeof(reply), 0, 10, 1, &len), EINVAL,
		     "receive_spin with reserved set: EINVAL");
	expect_errno(receive_spin(fd, reply, sizeof(reply), 0, VGPU_DEV_MAX_SPIN_US, 0, &len), EAGAIN,
		     "receive_spin, nothing queued: EAGAIN");
	expect_errno(receive_spin(fd, reply, sizeof(reply), 100, VGPU_DEV_MAX_SPIN_US, 0, &len),
		     ETIMEDOUT, "receive_spin, 100 ms: ETIMEDOUT");

	/* A valid request; its reply comes to this file only. */
	fd2 = open(VGPU_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd2 < 0 || ioctl(fd2, VGPU_IOC_INFO, &info2) != 0)
		fail("second open: %s", strerror(errno));
	if (info2.client == info.client || VGPU_VM_CLIENT_SLOT(info2.client) == VGPU_VM_CLIENT_SLOT(info.client))
		fail("two files share client %#x / slot", info.client);
	ok("two files: two clients, two slots");
	if (submit(fd, &req, sizeof(req)) != 0)
		fail("submit GetDeviceCount: %s", strerror(errno));
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 5000) != 1 || !(p.revents & POLLIN))
			fail("poll: no POLLIN within 5 s (revents %#x)", p.revents);
		ok("poll: POLLIN once the reply is there");
	}
	expect_errno(receive(fd2, reply, sizeof(reply), 200, &len), ETIMEDOUT,
		     "the other file does not see the reply");
	expect_errno(receive(fd, reply, 8, 0, &len), EMSGSIZE, "receive into 8 bytes: EMSGSIZE");
	if (len != sizeof(struct vgpu_msg_header) + 8)
		fail("EMSGSIZE reported len %u", len);
	expect_errno(receive(fd, (void *)8, sizeof(reply), 0, &len), EFAULT,
		     "receive to a bad pointer: EFAULT (the reply stays)");
	if (receive(fd, reply, sizeof(reply), 1000, &len) != 0)
		fail("receive: %s", strerror(errno));
	memcpy(&rh, reply, sizeof(rh));
	if (len != sizeof(rh) + 8 || rh.magic != VGPU_MSG_MAGIC || !(rh.flags & VGPU_MSG_REPLY) ||
	    rh.request_id != 7 || rh.client != info.client || rh.status != 0 ||
	    rh.opcode != OP_GET_DEVICE_COUNT)
		fail("reply: len %u, flags %#x, id %llu, client %#x, status %d", len, rh.flags,
		     (unsigned long long)rh.request_id, rh.client, rh.status);
	{
		int32_t count;

		memcpy(&count, reply + sizeof(rh), sizeof(count));
		if (count < 1)
			fail("GetDeviceCount: %d devices", count);
		printf("devices: %d\n", count);
	}
	ok("GetDeviceCount: stamped with the file's client, reply to that file");
	req = make_request(8);
	if (submit(fd, &req, sizeof(req)) != 0)
		fail("submit GetDeviceCount: %s", strerror(errno));
	if (receive_spin(fd, reply, sizeof(reply), 1000, VGPU_DEV_MAX_SPIN_US, 0, &len) != 0)
		fail("receive_spin: %s", strerror(errno));
	memcpy(&rh, reply, sizeof(rh));
	if (len != sizeof(rh) + 8 || rh.request_id != 8 || rh.client != info.client || rh.status != 0)
		fail("receive_spin reply: len %u, id %llu, client %#x, status %d", len,
		     (unsigned long long)rh.request_id, rh.client, rh.status);
	ok("receive_spin: the reply, and only the plain struct written back");
	submit_nowait(fd, &info);

	/* mmap: the file's slot, nothing else. */
	if (mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 4096) != MAP_FAILED || errno != EINVAL)
		fail("mmap at offset 4096 was not refused with EINVAL");
	ok("mmap past the slot start: EINVAL");
	if (mmap(NULL, info.slot_size + 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) != MAP_FAILED ||
	    errno != EINVAL)
		fail("mmap larger than the slot was not refused with EINVAL");
	ok("mmap larger than the slot: EINVAL");
	if (mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0) != MAP_FAILED || errno != EINVAL)
		fail("MAP_PRIVATE was not refused with EINVAL");
	ok("MAP_PRIVATE: EINVAL");
	slot = mmap(NULL, info.slot_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (slot == MAP_FAILED)
		fail("mmap of the slot: %s", strerror(errno));
	memset(slot, 0x5a, info.slot_size);
	if (((volatile uint8_t *)slot)[info.slot_size - 1] != 0x5a)
		fail("the slot does not hold what was written");
	munmap(slot, info.slot_size);
	ok("mmap of the slot: read and write");

	/* Every slot taken: the next open is refused. A closed file's slot comes
	 * back once the host has released what it held (its Goodbye answered). */
	{
		int extra[VGPU_VM_SLOTS], n = 0, i, round, got = 0;

		for (round = 0; round < 2; round++) {
			for (n = 0; n < (int)VGPU_VM_SLOTS; n++) {
				extra[n] = open(VGPU_DEV_PATH, O_RDWR | O_CLOEXEC);
				if (extra[n] < 0)
					break;
			}
			if (round == 0) {
				if (n != (int)VGPU_VM_SLOTS - 2 || errno != EBUSY)
					fail("open #%d: %s, expected EBUSY after %u files", n + 3,
					     strerror(errno), VGPU_VM_SLOTS);
				ok("every slot taken: the next open gets EBUSY");
			} else {
				got = n;
			}
			for (i = 0; i < n; i++)
				close(extra[i]);
			if (round == 0)
				usleep(200000); /* the Goodbyes go out and are answered */
		}
		for (i = 0; got < (int)VGPU_VM_SLOTS - 2 && i < 50; i++) {
			usleep(100000);
			got = 0;
			while (got < (int)VGPU_VM_SLOTS - 2 &&
			       (extra[got] = open(VGPU_DEV_PATH, O_RDWR | O_CLOEXEC)) >= 0)
				got++;
			for (n = 0; n < got; n++)
				close(extra[n]);
		}
		if (got != (int)VGPU_VM_SLOTS - 2)
			fail("after closing, only %d of %u slots came back", got, VGPU_VM_SLOTS - 2);
		ok("closed files' slots come back");
	}

	/* A signal interrupts a blocking receive. */
	{
		struct sigaction sa;
		struct itimerval t = { .it_value = { .tv_usec = 200000 } };

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm; /* no SA_RESTART */
		sigaction(SIGALRM, &sa, NULL);
		setitimer(ITIMER_REAL, &t, NULL);
		expect_errno(receive(fd, reply, sizeof(reply), -1, &len), EINTR,
			     "a signal interrupts a blocking receive: EINTR");
	}
	close(fd2);
	close(fd);
	printf("PASS vgpu_abi\n");
	return 0;
}
