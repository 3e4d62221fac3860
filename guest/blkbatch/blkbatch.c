// SPDX-License-Identifier: GPL-2.0
/*
 * blkbatch: read a block device with O_DIRECT in batches of many
 * requests at once, so that its completions arrive together and one run
 * of BLOCK_SOFTIRQ ends them all: a long softirq handler that comes from
 * a real device driver (virtio-blk), not from the test module.
 *
 * Each round submits DEPTH reads of KB kilobytes with Linux native AIO
 * (io_submit) and waits for all of them; ending a direct read releases
 * each page it pinned, so a batch's completion work grows with DEPTH x KB.
 * fio would do this too, but Debian's fio pulls Ceph and GlusterFS client
 * libraries (tens of MB) into every guest image; this needs no library.
 *
 * Usage: blkbatch DEVICE DEPTH KB SECONDS
 * Reads for SECONDS, or until SIGTERM (the plan stops it when its phases
 * end); prints "batches N" and "requests N" at the end.
 * Exit status: 0 ok, 1 I/O error, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEPTH 1024
#define MAX_KB 4096

static volatile sig_atomic_t stopped;

static void stop(int sig)
{
	(void)sig;
	stopped = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long number(const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	return (*s && !*end && v >= lo && v <= hi) ? v : -1;
}

int main(int argc, char **argv)
{
	static struct iocb cbs[MAX_DEPTH];
	static struct iocb *list[MAX_DEPTH];
	static struct io_event events[MAX_DEPTH];
	long depth, kb, seconds, batches = 0, requests = 0;
	unsigned long long size, offset = 0;
	aio_context_t ctx = 0;
	struct sigaction sa;
	double end;
	size_t len;
	char *buf;
	int fd, i;

	if (argc != 5 || (depth = number(argv[2], 1, MAX_DEPTH)) < 0 ||
	    (kb = number(argv[3], 4, MAX_KB)) < 0 ||
	    (seconds = number(argv[4], 1, 10000000)) < 0) {
		fprintf(stderr, "usage: blkbatch DEVICE DEPTH(1-%d) KB(4-%d) "
			"SECONDS\n", MAX_DEPTH, MAX_KB);
		return 2;
	}
	len = kb * 1024;
	fd = open(argv[1], O_RDONLY | O_DIRECT);
	if (fd < 0 || ioctl(fd, BLKGETSIZE64, &size) < 0) {
		fprintf(stderr, "blkbatch: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (size < len * depth) {
		fprintf(stderr, "blkbatch: %s: %llu bytes, a batch reads %zu\n",
			argv[1], size, len * depth);
		return 1;
	}
	if (posix_memalign((void **)&buf, 4096, len * depth)) {
		fprintf(stderr, "blkbatch: no memory for %ld x %ld KB\n",
			depth, kb);
		return 1;
	}
	if (syscall(SYS_io_setup, depth, &ctx) < 0) {
		fprintf(stderr, "blkbatch: io_setup: %s\n", strerror(errno));
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	end = now() + seconds;
	while (!stopped && now() < end) {
		for (i = 0; i < depth; i++) {
			if (offset + len > size)
				offset = 0;
			memset(&cbs[i], 0, sizeof(cbs[i]));
			cbs[i].aio_fildes = fd;
			cbs[i].aio_lio_opcode = IOCB_CMD_PREAD;
			cbs[i].aio_buf = (unsigned long)(buf + i * len);
			cbs[i].aio_nbytes = len;
			cbs[i].aio_offset = offset;
			list[i] = &cbs[i];
			offset += len;
		}
		/* all of the batch in, then all of it out */
		for (i = 0; i < depth;) {
			long n = syscall(SYS_io_submit, ctx, depth - i,
					 list + i);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				fprintf(stderr, "blkbatch: io_submit: %s\n",
					n < 0 ? strerror(errno) : "none taken");
				return 1;
			}
			i += n;
		}
		for (i = 0; i < depth;) {
			long k, n = syscall(SYS_io_getevents, ctx, 1, depth - i,
					    events, NULL);

			if (n < 0 && errno == EINTR)
				continue;	/* finish the batch, then stop */
			if (n < 0) {
				fprintf(stderr, "blkbatch: io_getevents: %s\n",
					strerror(errno));
				return 1;
			}
			for (k = 0; k < n; k++) {
				if (events[k].res != (long long)len) {
					fprintf(stderr, "blkbatch: a read "
						"returned %lld of %zu bytes\n",
						(long long)events[k].res, len);
					return 1;
				}
			}
			i += n;
		}
		batches++;
		requests += depth;
	}
	printf("batches %ld\nrequests %ld\n", batches, requests);
	return 0;
}
