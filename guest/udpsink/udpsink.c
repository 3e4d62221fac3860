// SPDX-License-Identifier: GPL-2.0
/*
 * udpsink: receive UDP datagrams on a port for a number of seconds and
 * print how many the application read.
 *
 * The receiving end of the nic-rx scenarios: the host sends through QEMU's
 * network backend, the guest's virtio-net driver takes the frames in
 * NET_RX, and this program is the application whose throughput suffers
 * when NET_RX is deferred or starved.  busybox nc has no UDP listener and
 * iperf3's server wants its own control connection, hence this.
 *
 * Usage: udpsink PORT SECONDS
 * Receives for SECONDS, or until SIGTERM (the plan stops it when its
 * phases end); prints "datagrams N" and "bytes N" at the end.
 * Exit status: 0 ok, 1 socket error, 2 usage.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

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

static long parse(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	return v;
}

int main(int argc, char **argv)
{
	/* a wake-up at least every 100 ms, so the deadline is kept */
	struct timeval tick = { .tv_sec = 0, .tv_usec = 100000 };
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct sigaction term = { .sa_handler = stop };
	unsigned long long datagrams = 0, bytes = 0;
	char buf[65536];
	double end;
	long port, secs;
	int fd;

	if (argc != 3 || (port = parse(argv[1], 1, 65535)) < 0 ||
	    (secs = parse(argv[2], 1, 86400)) < 0) {
		fprintf(stderr, "usage: udpsink PORT SECONDS\n");
		return 2;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	addr.sin_port = htons(port);
	addr.sin_addr.s_addr = htonl(INADDR_ANY);
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof(tick))) {
		perror("udpsink: socket");
		return 1;
	}
	/* no SA_RESTART: a SIGTERM ends the recv() it interrupts */
	sigaction(SIGTERM, &term, NULL);
	end = now() + secs;
	while (!stopped && now() < end) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n >= 0) {
			datagrams++;
			bytes += n;
		} else if (errno != EAGAIN && errno != EINTR) {
			perror("udpsink: recv");
			return 1;
		}
	}
	printf("datagrams %llu\nbytes %llu\n", datagrams, bytes);
	return 0;
}
