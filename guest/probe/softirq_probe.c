// SPDX-License-Identifier: GPL-2.0
/*
 * softirq_probe: wake an RT task while its previous CPU is inside a long
 * softirq handler, and record how long the wake-up took and where it ran.
 *
 * Each sample: pin to CPU c, run there briefly, ask softirq_load (debugfs
 * trigger file) to start a handler on c at time F = now + delay, widen the
 * affinity to every CPU, sleep until T = F + offset and on waking record
 * latency = now - T and the CPU it woke on.
 *
 * Who wakes the task:
 *   default  its own timer (clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME),
 *            which fires on c, the CPU it went to sleep on;
 *   -W w     a helper thread pinned to CPU w sleeps until T and wakes the
 *            task with a futex, so the wake-up is done from CPU w.
 *
 * Samples are kept in memory and written at the end (JSON lines), so that no
 * output traffic disturbs the measurement.
 *
 * Exit status: 0 ok, 1 measurement error (or interrupted), 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXIT_MEASURE	1
#define EXIT_USAGE	2

#define DEFAULT_TRIGGER	"/sys/kernel/debug/softirq_load/trigger"
#define DEFAULT_SPIN_US	5000
#define RUN_US		50	/* time spent running on CPU c before arming */
#define MAX_SAMPLES	10000000L
#define NSEC_PER_USEC	1000LL
#define NSEC_PER_SEC	1000000000LL

struct options {
	long samples;
	int cpu;
	int prio;
	long delay_us;
	long offset_us;		/* -1: a quarter of the handler's spin */
	long interval_us;
	long spin_us;		/* -1: read from the module's stats */
	int waker;		/* -1: own timer; else the helper's CPU */
	int pinned;		/* 1: never widen the affinity */
	const char *vector;	/* NULL: read from the module's stats */
	const char *output;	/* NULL: stdout */
	const char *trigger;
};

struct sample {
	int64_t target_ns;
	int64_t latency_ns;
	int64_t waker_ns;	/* the helper's own wake-up latency */
	int cpu;
	int prev_cpu;
};

struct module_info {
	char vector[64];
	long spin_us;
	long storm_spin_us;
	long long triggers;
	long long missed;
	int ok;
};

/* The helper that wakes the task from another CPU (-W). */
struct waker {
	pthread_t thread;
	int cpu;
	int prio;		/* 0: SCHED_OTHER */
	atomic_int go;		/* futex: bumped by the task, one per sample */
	atomic_int woken;	/* futex: set to go's value when waking */
	atomic_int quit;
	atomic_int ready;	/* futex: 1 set up, -errno failed */
	_Atomic int64_t target_ns;
	_Atomic int64_t wake_ns;	/* when the helper woke */
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static struct timespec to_timespec(int64_t ns)
{
	struct timespec ts = {
		.tv_sec = ns / NSEC_PER_SEC,
		.tv_nsec = ns % NSEC_PER_SEC,
	};

	return ts;
}

/* Sleep until an absolute CLOCK_MONOTONIC time; 0, or -1 if interrupted. */
static int sleep_until(int64_t ns)
{
	struct timespec ts = to_timespec(ns);
	int ret;

	ret = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	if (ret == EINTR)
		return -1;
	if (ret) {
		errno = ret;
		perror("clock_nanosleep");
		exit(EXIT_MEASURE);
	}
	return 0;
}

static long futex(atomic_int *word, int op, int val)
{
	return syscall(SYS_futex, (int *)word, op, val, NULL, NULL, 0);
}

/* Wait until *word != old; 0, or -1 if interrupted by a signal. */
static int futex_wait_change(atomic_int *word, int old)
{
	while (atomic_load(word) == old) {
		if (futex(word, FUTEX_WAIT_PRIVATE, old) && errno != EAGAIN) {
			if (errno == EINTR)
				return -1;
			perror("futex wait");
			exit(EXIT_MEASURE);
		}
	}
	return 0;
}

static void futex_wake(atomic_int *word)
{
	if (futex(word, FUTEX_WAKE_PRIVATE, 1) < 0) {
		perror("futex wake");
		exit(EXIT_MEASURE);
	}
}

static void *waker_main(void *arg)
{
	struct waker *w = arg;
	struct sched_param sp = { .sched_priority = w->prio };
	sigset_t sigs;
	cpu_set_t set;
	int seen = 0;

	/* signals are for the measuring thread */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) ||
	    sched_setscheduler(0, w->prio ? SCHED_FIFO : SCHED_OTHER, &sp)) {
		atomic_store(&w->ready, -errno);
		futex_wake(&w->ready);
		return NULL;
	}
	atomic_store(&w->ready, 1);
	futex_wake(&w->ready);
	for (;;) {
		futex_wait_change(&w->go, seen);
		seen = atomic_load(&w->go);
		if (atomic_load(&w->quit))
			return NULL;
		sleep_until(atomic_load(&w->target_ns));
		atomic_store(&w->wake_ns, now_ns());
		atomic_store(&w->woken, seen);
		futex_wake(&w->woken);
	}
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [-n samples] [-c cpu] [-p prio] [-d delay_us] [-w offset_us]\n"
		"          [-i interval_us] [-s spin_us] [-W waker_cpu] [-V vector] [-o file]\n"
		"          [-t trigger] [-P] [-h]\n"
		"Wake a SCHED_FIFO task while its previous CPU runs a softirq_load handler.\n"
		"  -n samples   number of samples (default 1000)\n"
		"  -c cpu       CPU the task runs on and the handler is started on (default 0)\n"
		"  -p prio      SCHED_FIFO priority 1..99 (default 90)\n"
		"  -d delay_us  handler starts this long after arming (default 2000)\n"
		"  -w offset_us wake this long after the handler starts\n"
		"               (default: a quarter of the handler's spin)\n"
		"  -i interval  us between sample starts (default 20000)\n"
		"  -s spin_us   handler spin, for the default offset (default: from the\n"
		"               module's stats, else %d)\n"
		"  -W cpu       wake the task from a helper thread on this CPU (SCHED_FIFO\n"
		"               prio-1, or SCHED_OTHER if prio is 1) instead of its own\n"
		"               timer, which fires on -c's CPU\n"
		"  -P           stay pinned to -c: no CPU to move to, so placement cannot\n"
		"               help and only the softirq loop decides the latency\n"
		"  -V vector    label for the output (default: from the module's stats)\n"
		"  -o file      write the JSON lines there (default stdout)\n"
		"  -t trigger   the module's trigger file (default %s)\n"
		"  -h           this help\n"
		"Output: one JSON line per sample, then one summary line.\n"
		"Exit: 0 ok, 1 measurement error or interrupted, 2 usage.\n",
		prog, DEFAULT_SPIN_US, DEFAULT_TRIGGER);
}

static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static void bad_option(const char *prog, int opt, const char *arg,
		       long min, long max)
{
	fprintf(stderr, "%s: -%c %s: expected an integer in %ld..%ld\n",
		prog, opt, arg, min, max);
	usage(stderr, prog);
	exit(EXIT_USAGE);
}

static void parse_args(int argc, char **argv, struct options *o)
{
	const char *prog = argv[0];
	long v;
	int opt;

	o->samples = 1000;
	o->cpu = 0;
	o->prio = 90;
	o->delay_us = 2000;
	o->offset_us = -1;
	o->interval_us = 20000;
	o->spin_us = -1;
	o->waker = -1;
	o->pinned = 0;
	o->vector = NULL;
	o->output = NULL;
	o->trigger = DEFAULT_TRIGGER;

	while ((opt = getopt(argc, argv, "n:c:p:d:w:i:s:W:PV:o:t:h")) != -1) {
		switch (opt) {
		case 'n':
			if (parse_long(optarg, 1, MAX_SAMPLES, &o->samples))
				bad_option(prog, opt, optarg, 1, MAX_SAMPLES);
			break;
		case 'P':
			o->pinned = 1;
			break;
		case 'c':
		case 'W':
			if (parse_long(optarg, 0, CPU_SETSIZE - 1, &v))
				bad_option(prog, opt, optarg, 0,
					   CPU_SETSIZE - 1);
			if (opt == 'c')
				o->cpu = (int)v;
			else
				o->waker = (int)v;
			break;
		case 'p':
			if (parse_long(optarg, 1, 99, &v))
				bad_option(prog, opt, optarg, 1, 99);
			o->prio = (int)v;
			break;
		case 'd':
			if (parse_long(optarg, 1, 10000000, &o->delay_us))
				bad_option(prog, opt, optarg, 1, 10000000);
			break;
		case 'w':
			if (parse_long(optarg, 0, 10000000, &o->offset_us))
				bad_option(prog, opt, optarg, 0, 10000000);
			break;
		case 'i':
			if (parse_long(optarg, 1, 100000000, &o->interval_us))
				bad_option(prog, opt, optarg, 1, 100000000);
			break;
		case 's':
			if (parse_long(optarg, 1, 100000, &o->spin_us))
				bad_option(prog, opt, optarg, 1, 100000);
			break;
		case 'V':
			o->vector = optarg;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 't':
			o->trigger = optarg;
			break;
		case 'h':
			usage(stdout, prog);
			exit(0);
		default:
			usage(stderr, prog);
			exit(EXIT_USAGE);
		}
	}
	if (optind != argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n",
			prog, argv[optind]);
		usage(stderr, prog);
		exit(EXIT_USAGE);
	}
	if (o->waker == o->cpu) {
		fprintf(stderr, "%s: -W must name another CPU than -c\n", prog);
		usage(stderr, prog);
		exit(EXIT_USAGE);
	}
}

/* Read softirq_load's one-line stats file next to the trigger file. */
static void read_module_info(const char *trigger, struct module_info *mi)
{
	char path[PATH_MAX], line[1024], *tok, *save;
	const char *slash = strrchr(trigger, '/');
	size_t dirlen = slash ? (size_t)(slash - trigger) : 0;
	FILE *f;

	memset(mi, 0, sizeof(*mi));
	mi->spin_us = -1;
	mi->storm_spin_us = -1;
	mi->triggers = -1;
	mi->missed = -1;
	if (dirlen + sizeof("/stats") > sizeof(path))
		return;
	if (slash)
		snprintf(path, sizeof(path), "%.*s/stats", (int)dirlen,
			 trigger);
	else
		snprintf(path, sizeof(path), "stats");
	f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return;
	}
	fclose(f);
	for (tok = strtok_r(line, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save)) {
		if (!strncmp(tok, "vector=", 7))
			snprintf(mi->vector, sizeof(mi->vector), "%s", tok + 7);
		else if (!strncmp(tok, "spin_us=", 8))
			mi->spin_us = strtol(tok + 8, NULL, 10);
		else if (!strncmp(tok, "storm_spin_us=", 14))
			mi->storm_spin_us = strtol(tok + 14, NULL, 10);
		else if (!strncmp(tok, "triggers=", 9))
			mi->triggers = strtoll(tok + 9, NULL, 10);
		else if (!strncmp(tok, "missed=", 7))
			mi->missed = strtoll(tok + 7, NULL, 10);
	}
	mi->ok = mi->vector[0] != '\0';
}

/* The spin of the handlers the probe aims at: the long ones if selected. */
static long module_spin_us(const struct module_info *mi)
{
	const char *v = mi->vector;

	if (strstr(v, "block") || strstr(v, "net_rx") || strstr(v, "irq_poll"))
		return mi->spin_us;
	return mi->storm_spin_us;
}

static void set_affinity(const cpu_set_t *set, const char *what)
{
	if (sched_setaffinity(0, sizeof(*set), set)) {
		perror(what);
		exit(EXIT_MEASURE);
	}
}

static void spin_for(int64_t ns)
{
	int64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

static void arm_trigger(int fd, const char *path, int64_t fire_ns)
{
	char buf[32];
	int len;

	len = snprintf(buf, sizeof(buf), "@%" PRId64 "\n", fire_ns);
	if (write(fd, buf, (size_t)len) != len) {
		fprintf(stderr, "write %s: %s\n", path, strerror(errno));
		exit(EXIT_MEASURE);
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values, p in (0, 100]. */
static int64_t percentile(const int64_t *sorted, long n, double p)
{
	long rank = (long)((p / 100.0) * (double)n + 0.999999999);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static double us(int64_t ns)
{
	return (double)ns / (double)NSEC_PER_USEC;
}

static int write_results(const struct options *o, const char *vector,
			 const struct sample *s, long n, long late,
			 long long triggers, long long missed, int interrupted)
{
	FILE *f = stdout;
	int64_t *sorted = NULL, sum = 0;
	long i, moved = 0, over_1ms = 0;

	if (o->output) {
		f = fopen(o->output, "w");
		if (!f) {
			fprintf(stderr, "open %s: %s\n", o->output,
				strerror(errno));
			return -1;
		}
	}
	for (i = 0; i < n; i++) {
		fprintf(f, "{\"i\":%ld,\"latency_us\":%.3f,\"cpu\":%d,\"prev_cpu\":%d,\"vector\":",
			i, us(s[i].latency_ns), s[i].cpu, s[i].prev_cpu);
		json_string(f, vector);
		if (o->waker >= 0)
			fprintf(f, ",\"waker_us\":%.3f", us(s[i].waker_ns));
		fprintf(f, ",\"t_ns\":%" PRId64 "}\n", s[i].target_ns);
		if (s[i].cpu != s[i].prev_cpu)
			moved++;
		if (s[i].latency_ns > 1000 * NSEC_PER_USEC)
			over_1ms++;
		sum += s[i].latency_ns;
	}

	fprintf(f, "{\"summary\":true,\"n\":%ld", n);
	if (n > 0) {
		sorted = malloc((size_t)n * sizeof(*sorted));
		if (!sorted) {
			perror("malloc");
			if (f != stdout)
				fclose(f);
			return -1;
		}
		for (i = 0; i < n; i++)
			sorted[i] = s[i].latency_ns;
		qsort(sorted, (size_t)n, sizeof(*sorted), cmp_i64);
		fprintf(f, ",\"min_us\":%.3f,\"median_us\":%.3f,\"mean_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f",
			us(sorted[0]), us(percentile(sorted, n, 50.0)),
			us(sum / n), us(percentile(sorted, n, 99.0)),
			us(percentile(sorted, n, 99.9)), us(sorted[n - 1]));
		free(sorted);
	}
	fprintf(f, ",\"moved\":%ld,\"over_1ms\":%ld,\"late\":%ld", moved,
		over_1ms, late);
	fprintf(f, ",\"triggers\":%lld,\"missed\":%lld", triggers, missed);
	fprintf(f, ",\"requested\":%ld,\"interrupted\":%s,\"vector\":",
		o->samples, interrupted ? "true" : "false");
	json_string(f, vector);
	fprintf(f, ",\"cpu\":%d,\"pinned\":%d,\"waker\":%d,\"prio\":%d,\"delay_us\":%ld,\"offset_us\":%ld,\"interval_us\":%ld}\n",
		o->cpu, o->pinned, o->waker, o->prio, o->delay_us, o->offset_us,
		o->interval_us);

	if (fflush(f) || ferror(f)) {
		fprintf(stderr, "write %s: %s\n",
			o->output ? o->output : "stdout", strerror(errno));
		if (f != stdout)
			fclose(f);
		return -1;
	}
	if (f != stdout && fclose(f)) {
		fprintf(stderr, "close %s: %s\n", o->output, strerror(errno));
		return -1;
	}
	return 0;
}

static void start_waker(struct waker *w, const struct options *o,
			const cpu_set_t *all, const char *prog)
{
	int ret;

	if (!CPU_ISSET(o->waker, all)) {
		fprintf(stderr, "%s: waker CPU %d is not available to this task\n",
			prog, o->waker);
		exit(EXIT_MEASURE);
	}
	w->cpu = o->waker;
	w->prio = o->prio > 1 ? o->prio - 1 : 0;
	ret = pthread_create(&w->thread, NULL, waker_main, w);
	if (ret) {
		errno = ret;
		perror("pthread_create (waker)");
		exit(EXIT_MEASURE);
	}
	futex_wait_change(&w->ready, 0);
	if (atomic_load(&w->ready) < 0) {
		errno = -atomic_load(&w->ready);
		fprintf(stderr, "%s: waker thread on CPU %d: %s\n", prog,
			w->cpu, strerror(errno));
		pthread_join(w->thread, NULL);
		exit(EXIT_MEASURE);
	}
}

static void stop_waker(struct waker *w)
{
	atomic_store(&w->quit, 1);
	atomic_fetch_add(&w->go, 1);
	futex_wake(&w->go);
	pthread_join(w->thread, NULL);
}

/*
 * Sleep until target: on the task's own timer, or until the helper wakes it.
 * 0, or -1 if interrupted.
 */
static int wait_for_wake(struct waker *w, int64_t target)
{
	int old;

	if (!w)
		return sleep_until(target);
	old = atomic_load(&w->woken);
	atomic_store(&w->target_ns, target);
	atomic_fetch_add(&w->go, 1);
	futex_wake(&w->go);
	/* the helper sets woken to go's new value; a signal may cut this */
	return futex_wait_change(&w->woken, old);
}

int main(int argc, char **argv)
{
	struct module_info before, after;
	struct sched_param sp = { 0 };
	struct waker waker_state, *waker = NULL;
	struct sigaction sa;
	struct options o;
	cpu_set_t all, one;
	struct sample *s;
	const char *vector;
	long n = 0, late = 0;
	int64_t next, fire, target, wake;
	int fd, interrupted = 0, prev;

	parse_args(argc, argv, &o);

	read_module_info(o.trigger, &before);
	vector = o.vector ? o.vector : (before.ok ? before.vector : "unknown");
	if (o.offset_us < 0) {
		long spin = o.spin_us;

		if (spin < 0 && before.ok)
			spin = module_spin_us(&before);
		if (spin <= 0)
			spin = DEFAULT_SPIN_US;
		o.offset_us = spin / 4;
	}
	if (o.delay_us + o.offset_us >= o.interval_us) {
		fprintf(stderr, "%s: delay (%ld) + offset (%ld) must be below the interval (%ld us)\n",
			argv[0], o.delay_us, o.offset_us, o.interval_us);
		usage(stderr, argv[0]);
		return EXIT_USAGE;
	}

	if (sched_getaffinity(0, sizeof(all), &all)) {
		perror("sched_getaffinity");
		return EXIT_MEASURE;
	}
	if (!CPU_ISSET(o.cpu, &all)) {
		fprintf(stderr, "%s: CPU %d is not available to this task\n",
			argv[0], o.cpu);
		return EXIT_MEASURE;
	}
	CPU_ZERO(&one);
	CPU_SET(o.cpu, &one);

	s = calloc((size_t)o.samples, sizeof(*s));
	if (!s) {
		perror("calloc");
		return EXIT_MEASURE;
	}
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		perror("mlockall (going on without)");

	fd = open(o.trigger, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", o.trigger, strerror(errno));
		return EXIT_MEASURE;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL)) {
		perror("sigaction");
		return EXIT_MEASURE;
	}

	if (o.waker >= 0) {
		memset(&waker_state, 0, sizeof(waker_state));
		waker = &waker_state;
		start_waker(waker, &o, &all, argv[0]);
	}

	sp.sched_priority = o.prio;
	if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
		perror("sched_setscheduler SCHED_FIFO");
		return EXIT_MEASURE;
	}

	next = now_ns();
	while (n < o.samples) {
		if (stop_requested || sleep_until(next)) {
			interrupted = 1;
			break;
		}
		set_affinity(&one, "sched_setaffinity (pin)");
		if (sched_getcpu() != o.cpu) {
			fprintf(stderr, "%s: still on CPU %d after pinning to %d\n",
				argv[0], sched_getcpu(), o.cpu);
			return EXIT_MEASURE;
		}
		spin_for(RUN_US * NSEC_PER_USEC);

		fire = now_ns() + o.delay_us * NSEC_PER_USEC;
		arm_trigger(fd, o.trigger, fire);
		if (!o.pinned)
			set_affinity(&all, "sched_setaffinity (widen)");
		prev = sched_getcpu();
		target = fire + o.offset_us * NSEC_PER_USEC;

		if (now_ns() >= fire) {
			/* the handler started while this task still ran */
			if (++late > o.samples) {
				fprintf(stderr, "%s: %ld arms came too late: the handler started before the probe slept (raise -d)\n",
					argv[0], late);
				return EXIT_MEASURE;
			}
			if (wait_for_wake(waker, target)) {
				interrupted = 1;
				break;
			}
		} else {
			if (wait_for_wake(waker, target)) {
				interrupted = 1;
				break;
			}
			wake = now_ns();
			s[n].target_ns = target;
			s[n].latency_ns = wake - target;
			s[n].waker_ns = waker ?
				atomic_load(&waker->wake_ns) - target : 0;
			s[n].cpu = sched_getcpu();
			s[n].prev_cpu = prev;
			n++;
		}

		next += o.interval_us * NSEC_PER_USEC;
		if (next < now_ns())
			next = now_ns();
	}
	close(fd);

	sp.sched_priority = 0;
	sched_setscheduler(0, SCHED_OTHER, &sp);
	if (waker)
		stop_waker(waker);

	read_module_info(o.trigger, &after);
	if (write_results(&o, vector, s, n, late,
			  before.triggers >= 0 && after.triggers >= 0 ?
			  after.triggers - before.triggers : -1,
			  before.missed >= 0 && after.missed >= 0 ?
			  after.missed - before.missed : -1,
			  interrupted)) {
		free(s);
		return EXIT_MEASURE;
	}
	free(s);
	if (interrupted) {
		fprintf(stderr, "%s: interrupted after %ld samples\n",
			argv[0], n);
		return EXIT_MEASURE;
	}
	if (late * 10 > o.samples)
		fprintf(stderr, "%s: %ld arms came too late (raise -d)\n",
			argv[0], late);
	return 0;
}
