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
 * Usage: cpuspeed [-n ITERATIONS] [-r REPEATS] [-b BUSY]
 * Prints "cpuN RATE" per online CPU, RATE the best of REPEATS runs.
 * With -b, CPUs 0 to BUSY-1 run the loop at the same time, each
 * measuring itself while the others are busy, and only those are
 * printed: under the emulator's shared clock each of N busy vCPUs runs
 * at 1/N of the speed, in parallel virtual time each at its own
 * (common/qemu/0005).  A CPU that finished its repeats keeps spinning
 * until every one has, so that none is measured beside an idle one.
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
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned long iterations = 20000;
static int repeats = 30;

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

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "cpuspeed: cpu%d: %s\n", cpu, strerror(errno));
		return -1;
	}
	return 0;
}

/* The best rate of `repeats` runs of the loop, on the calling CPU. */
static double best_rate(void)
{
	double best = 0;
	int r;

	for (r = 0; r < repeats; r++) {
		double start = now_ms(), took;

		spin(iterations);
		took = now_ms() - start;
		if (took > 0 && iterations / took > best)
			best = iterations / took;
	}
	return best;
}

struct busy_cpu {
	pthread_t thread;
	int cpu;
	int failed;
	double rate;
};

static pthread_barrier_t start;
static int busy_cpus, finished;
static pthread_mutex_t finished_lock = PTHREAD_MUTEX_INITIALIZER;

static int all_finished(void)
{
	int done;

	pthread_mutex_lock(&finished_lock);
	done = finished == busy_cpus;
	pthread_mutex_unlock(&finished_lock);
	return done;
}

static void *measure_busy(void *arg)
{
	struct busy_cpu *self = arg;

	self->failed = pin(self->cpu);
	pthread_barrier_wait(&start);
	if (!self->failed)
		self->rate = best_rate();
	pthread_mutex_lock(&finished_lock);
	finished++;
	pthread_mutex_unlock(&finished_lock);
	while (!self->failed && !all_finished())
		spin(1000);
	return NULL;
}

static int measure_together(int busy)
{
	struct busy_cpu *cpus = calloc(busy, sizeof(*cpus));
	int i, rc = 0;

	if (!cpus)
		return 1;
	busy_cpus = busy;
	pthread_barrier_init(&start, NULL, busy);
	for (i = 0; i < busy; i++) {
		cpus[i].cpu = i;
		if (pthread_create(&cpus[i].thread, NULL, measure_busy,
				   &cpus[i])) {
			fprintf(stderr, "cpuspeed: cannot start thread %d\n", i);
			exit(1);
		}
	}
	for (i = 0; i < busy; i++) {
		pthread_join(cpus[i].thread, NULL);
		if (cpus[i].failed)
			rc = 1;
		else
			printf("cpu%d %.1f\n", i, cpus[i].rate);
	}
	free(cpus);
	return rc;
}

int main(int argc, char **argv)
{
	int opt, cpu, busy = 0;
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct sched_param prio = { .sched_priority = 1 };

	while ((opt = getopt(argc, argv, "n:r:b:")) != -1) {
		if (opt == 'n')
			iterations = strtoul(optarg, NULL, 10);
		else if (opt == 'r')
			repeats = atoi(optarg);
		else if (opt == 'b')
			busy = atoi(optarg);
		else
			goto usage;
	}
	if (!iterations || repeats < 1 || busy < 0)
		goto usage;
	if (busy > ncpus) {
		fprintf(stderr, "cpuspeed: -b %d: only %ld CPUs online\n",
			busy, ncpus);
		return 2;
	}
	/* above the guest's own tasks, so the loop alone is measured */
	if (sched_setscheduler(0, SCHED_FIFO, &prio))
		fprintf(stderr, "cpuspeed: SCHED_FIFO: %s\n", strerror(errno));
	if (busy)
		return measure_together(busy);
	for (cpu = 0; cpu < ncpus; cpu++) {
		if (pin(cpu))
			return 1;
		printf("cpu%d %.1f\n", cpu, best_rate());
	}
	return 0;
usage:
	fprintf(stderr,
		"usage: cpuspeed [-n ITERATIONS] [-r REPEATS] [-b BUSY]\n");
	return 2;
}
