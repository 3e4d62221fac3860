// SPDX-License-Identifier: GPL-2.0
/*
 * cpuspeed: how fast each CPU runs a fixed loop, in loop iterations per
 * millisecond of CLOCK_MONOTONIC, one CPU at a time with the others idle.
 *
 * The lab declares CPUs of different sizes twice: to the kernel in the
 * device tree, and to QEMU as per-vCPU speeds in virtual time.  This is
 * the check that the second took: a CPU declared at half the capacity
 * of another must run this loop at half its rate.  No tool in Debian
 * measures one CPU's speed in isolation without its own scheduling
 * noise (stress-ng's bogo-ops run every CPU at once), so it is written
 * here, a few lines.
 *
 * Usage: cpuspeed [-n ITERATIONS] [-r REPEATS]
 * Prints "cpuN RATE" per online CPU, RATE the best of REPEATS runs.
 * The defaults (20000 iterations, 30 repeats) keep a repeat shorter than
 * the tick (3.4 ms on a CPU of 0.28 of a big one's speed, against 4 ms
 * at HZ=250), so the best one ran without an interrupt and measures the
 * CPU rather than the kernel's work on it, which takes a larger share of
 * a slower CPU and more on PREEMPT_RT: 500000-iteration repeats read
 * such a CPU 4% slow on 6.1, 100000-iteration ones 1.3% on 6.1 and up
 * to 6.2% on PREEMPT_RT.  The whole spin at SCHED_FIFO (0.1 s there)
 * stays under the 0.95 s a second that RT throttling allows.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The loop's body is a dependency chain the compiler cannot remove. */
static unsigned long spin(unsigned long n)
{
	volatile unsigned long x = 1;
	unsigned long i;

	for (i = 0; i < n; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	return x;
}

int main(int argc, char **argv)
{
	unsigned long iterations = 20000;
	int repeats = 30, opt, cpu, r;
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct sched_param prio = { .sched_priority = 1 };

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		if (opt == 'n')
			iterations = strtoul(optarg, NULL, 10);
		else if (opt == 'r')
			repeats = atoi(optarg);
		else
			goto usage;
	}
	if (!iterations || repeats < 1)
		goto usage;
	/* above the guest's own tasks, so the loop alone is measured */
	if (sched_setscheduler(0, SCHED_FIFO, &prio))
		fprintf(stderr, "cpuspeed: SCHED_FIFO: %s\n", strerror(errno));
	for (cpu = 0; cpu < ncpus; cpu++) {
		cpu_set_t set;
		double best = 0;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "cpuspeed: cpu%d: %s\n", cpu,
				strerror(errno));
			return 1;
		}
		for (r = 0; r < repeats; r++) {
			double start = now_ms(), took;

			spin(iterations);
			took = now_ms() - start;
			if (took > 0 && iterations / took > best)
				best = iterations / took;
		}
		printf("cpu%d %.1f\n", cpu, best);
	}
	return 0;
usage:
	fprintf(stderr, "usage: cpuspeed [-n ITERATIONS] [-r REPEATS]\n");
	return 2;
}
