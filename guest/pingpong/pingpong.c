// SPDX-License-Identifier: GPL-2.0
/*
 * pingpong: the round trip of a store between two CPUs, each spinning on
 * a shared word: CPU A writes, CPU B sees it and answers, A sees the
 * answer.  No system call and no scheduler is on the path, so what is
 * measured is how long one CPU's store takes to be seen by another: on
 * a machine a cache line's trip, tens to hundreds of ns; in an emulator
 * that runs its vCPUs in turn, the turns (common/qemu/0005 bounds them
 * by its slice).  rt-tests' IPC latency tests (ptsematest, sigwaittest,
 * pmqtest) keep both threads of a pair on one CPU or go through the
 * scheduler, so this is written here.
 *
 * Usage: pingpong [-a CPU] [-b CPU] [-n ROUNDS]
 * Prints "rounds N min_ns P50_ns P99_ns max_ns".
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

static volatile int word;
static int rounds = 2000;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void *answer(void *arg)
{
	int i;

	if (pin(*(int *)arg)) {
		perror("pingpong: answering CPU");
		exit(1);
	}
	for (i = 0; i < rounds; i++) {
		while (__atomic_load_n(&word, __ATOMIC_ACQUIRE) != 1)
			;
		__atomic_store_n(&word, 2, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int by_value(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int a = 0, b = 1, opt, i;
	struct sched_param prio = { .sched_priority = 1 };
	long long *trip;
	pthread_t other;

	while ((opt = getopt(argc, argv, "a:b:n:")) != -1) {
		if (opt == 'a')
			a = atoi(optarg);
		else if (opt == 'b')
			b = atoi(optarg);
		else if (opt == 'n')
			rounds = atoi(optarg);
		else
			goto usage;
	}
	if (rounds < 1 || a == b)
		goto usage;
	trip = calloc(rounds, sizeof(*trip));
	if (!trip)
		return 1;
	if (sched_setscheduler(0, SCHED_FIFO, &prio))
		fprintf(stderr, "pingpong: SCHED_FIFO: %s\n", strerror(errno));
	if (pthread_create(&other, NULL, answer, &b)) {
		fprintf(stderr, "pingpong: cannot start the answering thread\n");
		return 1;
	}
	if (pin(a)) {
		perror("pingpong: asking CPU");
		return 1;
	}
	for (i = 0; i < rounds; i++) {
		long long start = now_ns();

		__atomic_store_n(&word, 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&word, __ATOMIC_ACQUIRE) != 2)
			;
		trip[i] = now_ns() - start;
	}
	pthread_join(other, NULL);
	qsort(trip, rounds, sizeof(*trip), by_value);
	printf("rounds %d min_ns %lld p50_ns %lld p99_ns %lld max_ns %lld\n",
	       rounds, trip[0], trip[rounds / 2], trip[rounds * 99 / 100],
	       trip[rounds - 1]);
	return 0;
usage:
	fprintf(stderr, "usage: pingpong [-a CPU] [-b CPU] [-n ROUNDS]\n");
	return 2;
}
