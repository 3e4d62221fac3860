// SPDX-License-Identifier: GPL-2.0
/*
 * softirq_load - real softirq work of a chosen vector on a chosen CPU.
 *
 * A hard-irq hrtimer pinned to one CPU starts, at each trigger, a chain of
 * handler runs in every selected vector.  Each run busy-waits for a set time
 * and then raises its vector again for the next run, up to "burst" runs per
 * trigger, so every run is one pass of the vector through the softirq loop.
 * The work goes through the interfaces drivers use, so it lands in the
 * vector a driver's work would land in:
 *
 *   block     ->complete() of a request on a blk-mq queue with one hardware
 *             queue, signalled with blk_mq_complete_request(): BLOCK_SOFTIRQ
 *   net_rx    NAPI poll, napi_schedule(): NET_RX_SOFTIRQ
 *   irq_poll  irq_poll callback, irq_poll_sched(): IRQ_POLL_SOFTIRQ
 *   tasklet   tasklet, tasklet_schedule(): TASKLET_SOFTIRQ
 *   hi        tasklet, tasklet_hi_schedule(): HI_SOFTIRQ
 *   storm     tasklet and hi together
 *
 * Triggers come from a periodic timer (period_us > 0) or from writes to
 * debugfs softirq_load/trigger.  Counters are in debugfs softirq_load/.
 *
 * With irq=hard (the default) the timer's hard irq starts the chains, so
 * their softirqs run at its irq exit, or in ksoftirqd where the kernel
 * defers them (on PREEMPT_RT always).  With irq=thread the timer fires an
 * interrupt of the module's own whose handler is threaded, as a device
 * driver's is on PREEMPT_RT or with threadirqs: the thread (SCHED_FIFO 50,
 * bound to cpu=) starts the chains with bottom halves disabled, and the
 * softirqs start in that thread when it enables them again; what the
 * kernel's softirq loop does not finish there goes to ksoftirqd, as a
 * device's would.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/hrtimer.h>
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <linux/irq_poll.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/sched.h>
#include <linux/sched/rt.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#define SL_MAX_SPIN_US		100000U
#define SL_MAX_BURST		1000U
#define SL_MAX_NAPIS		16U
#define SL_MIN_PERIOD_US	100U
#define SL_MAX_PERIOD_US	10000000U
#define SL_MAX_DELAY_US		10000000ULL
/* = irq_poll_budget in lib/irq_poll.c: one poll per IRQ_POLL_SOFTIRQ run */
#define SL_IRQ_POLL_WEIGHT	256
/* requests wait for their trigger; do not let blk-mq time them out early */
#define SL_BLK_TIMEOUT		(3600 * HZ)

static char *sl_vector_param = "block";
module_param_named(vector, sl_vector_param, charp, 0444);
MODULE_PARM_DESC(vector,
		 "comma-separated list of block, net_rx, irq_poll, tasklet, hi; storm = tasklet,hi (default block)");

static unsigned int sl_spin_us = 5000;
module_param_named(spin_us, sl_spin_us, uint, 0444);
MODULE_PARM_DESC(spin_us,
		 "busy time of one block, net_rx or irq_poll handler run in us, 1..100000 (default 5000)");

static unsigned int sl_storm_spin_us = 100;
module_param_named(storm_spin_us, sl_storm_spin_us, uint, 0444);
MODULE_PARM_DESC(storm_spin_us,
		 "busy time of one tasklet or hi handler run in us, 1..100000 (default 100)");

static unsigned int sl_period_us;
module_param_named(period_us, sl_period_us, uint, 0444);
MODULE_PARM_DESC(period_us,
		 "trigger period in us; 0 = on demand only (default); else 100..10000000 and at least the longest selected spin");

static int sl_cpu;
module_param_named(cpu, sl_cpu, int, 0444);
MODULE_PARM_DESC(cpu, "CPU the trigger timer and the handlers run on, must be online (default 0)");

static unsigned int sl_burst = 1;
module_param_named(burst, sl_burst, uint, 0444);
MODULE_PARM_DESC(burst,
		 "handler runs per trigger in each selected vector, each raising the vector again, 1..1000 (default 1)");

static unsigned int sl_napis = 1;
module_param_named(napis, sl_napis, uint, 0444);
MODULE_PARM_DESC(napis,
		 "NAPI instances for net_rx, 1..16 (default 1); with more than one, a trigger schedules them all and net_rx_action() polls them one after another in one pass; needs burst=1");

static char *sl_irq_param = "hard";
module_param_named(irq, sl_irq_param, charp, 0444);
MODULE_PARM_DESC(irq,
		 "what starts the chains: hard = the timer's hard irq (default); thread = the thread of a threaded interrupt the timer fires, as a device's on PREEMPT_RT");

enum sl_vec_id {
	SL_BLOCK,
	SL_NET_RX,
	SL_IRQ_POLL,
	SL_TASKLET,
	SL_HI,
	SL_NR_VEC
};

enum sl_ctr {
	SL_TRIGGERS,		/* chains started */
	SL_MISSED,		/* triggers that found the last chain running */
	SL_SHORT,		/* chains ended early: no request ready */
	SL_RUNS,		/* handler runs */
	SL_TOTAL_NS,		/* time inside handlers */
	SL_MAX_NS,		/* longest handler run */
	SL_INLINE,		/* runs not in ksoftirqd: irq exit, bh enable */
	SL_KSOFTIRQD,		/* runs in ksoftirqd */
	SL_INLINE_IDLE,		/* inline runs on top of the idle task */
	SL_INLINE_RT,		/* inline runs on top of an RT task */
	SL_IRQ_THREAD,		/* runs in the module's interrupt thread */
	SL_WRONG_CTX,		/* runs outside softirq context */
	SL_WRONG_CPU,		/* runs on another CPU than cpu= */
	SL_DELAY_TOTAL_NS,	/* trigger to first run of its chain, summed */
	SL_DELAY_MAX_NS,	/* trigger to first run of its chain, longest */
	SL_BATCHES,		/* chains whose first run was inline */
	SL_BATCH_TOTAL_NS,	/* their first inline batch, summed */
	SL_BATCH_MIN_NS,	/* their first inline batch, shortest */
	SL_BATCH_MAX_NS,	/* their first inline batch, longest */
	SL_NR_CTR
};

static const char * const sl_ctr_names[SL_NR_CTR] = {
	[SL_TRIGGERS]		= "triggers",
	[SL_MISSED]		= "missed",
	[SL_SHORT]		= "short",
	[SL_RUNS]		= "runs",
	[SL_TOTAL_NS]		= "total_ns",
	[SL_MAX_NS]		= "max_ns",
	[SL_INLINE]		= "inline",
	[SL_KSOFTIRQD]		= "ksoftirqd",
	[SL_INLINE_IDLE]	= "inline_idle",
	[SL_INLINE_RT]		= "inline_rt",
	[SL_IRQ_THREAD]		= "irq_thread",
	[SL_WRONG_CTX]		= "wrong_ctx",
	[SL_WRONG_CPU]		= "wrong_cpu",
	[SL_DELAY_TOTAL_NS]	= "delay_total_ns",
	[SL_DELAY_MAX_NS]	= "delay_max_ns",
	[SL_BATCHES]		= "batches",
	[SL_BATCH_TOTAL_NS]	= "batch_total_ns",
	[SL_BATCH_MIN_NS]	= "batch_min_ns",
	[SL_BATCH_MAX_NS]	= "batch_max_ns",
};

/* debugfs index of the "fires" counter, after the per-vector ones */
#define SL_FIRES		SL_NR_CTR

struct sl_vec {
	const char *name;
	unsigned int enabled;		/* selected with vector= */
	unsigned int ready;		/* set up, needs tearing down */
	u64 spin_ns;			/* busy time of one run */
	atomic_t active;		/* a chain of this vector is running */
	/* written by the trigger, then by the chain's runs, all on cpu= */
	unsigned int left;		/* runs left in the chain */
	unsigned int first;		/* the next run is the chain's first */
	u64 trig_ns;			/* when the chain was triggered */
	u64 batch_start;		/* first inline batch: first run start */
	u64 batch_end;			/* ... and end of its last run so far */
	unsigned int batch_open;	/* the first batch may still grow */
	/* under sl_stats_lock */
	u64 ctr[SL_NR_CTR];
	int last_cpu;
	struct tasklet_struct tasklet;	/* tasklet and hi only */
};

static struct sl_vec sl_vecs[SL_NR_VEC] = {
	[SL_BLOCK]	= { .name = "block" },
	[SL_NET_RX]	= { .name = "net_rx" },
	[SL_IRQ_POLL]	= { .name = "irq_poll" },
	[SL_TASKLET]	= { .name = "tasklet" },
	[SL_HI]		= { .name = "hi" },
};

/*
 * Both locks are taken from the trigger's hard-irq hrtimer, so they are
 * raw: on PREEMPT_RT a spinlock_t sleeps, and a trigger that found the
 * tasklet holding it scheduled in hard irq and hung ksoftirqd.  Every
 * section under them is a few counters or a list operation.
 */
static DEFINE_RAW_SPINLOCK(sl_stats_lock);	/* counters, last CPU, fires */
static u64 sl_fires;			/* timer expiries */
static int sl_last_cpu = -1;		/* CPU of the last handler run */

static bool sl_stopping;		/* unloading: start nothing new */
static char sl_vector_str[64];		/* the selected vectors, normalised */
static u64 sl_period_ns;

static struct hrtimer sl_period_timer;
static struct hrtimer sl_oneshot_timer;
static struct dentry *sl_dir;

/* irq=thread */
static bool sl_threaded;
static int sl_irq = -1;
static struct task_struct *sl_irq_task;	/* its thread, once it has run */
static u64 sl_fired_ns;			/* when the timer last fired it */

/* block */
struct sl_cmd {
	struct list_head node;		/* on sl_blk_ready while waiting */
};

static DEFINE_RAW_SPINLOCK(sl_blk_lock);	/* sl_blk_ready, sl_stopping writes */
static LIST_HEAD(sl_blk_ready);		/* started requests, not completed */
static struct blk_mq_tag_set sl_tag_set;
static struct request_queue *sl_blk_q;
static unsigned int sl_blk_stock;	/* requests kept in flight */
static atomic_t sl_blk_stocked = ATOMIC_INIT(0);	/* the refill's count */
static atomic_t sl_blk_inflight = ATOMIC_INIT(0);	/* the teardown's */
static DECLARE_WAIT_QUEUE_HEAD(sl_blk_waitq);
static void sl_blk_refill(struct work_struct *work);
static DECLARE_WORK(sl_blk_refill_work, sl_blk_refill);

/* net_rx */
static struct net_device *sl_ndev;
static struct napi_struct sl_napi[SL_MAX_NAPIS];

/* irq_poll */
static struct irq_poll sl_iop;

/*
 * The per-CPU ksoftirqd pointer is not exported to modules, so recognise the
 * thread by its flag and name: "ksoftirqd/N" is bound to CPU N.
 */
static bool sl_in_ksoftirqd(void)
{
	return (current->flags & PF_KTHREAD) &&
	       !strncmp(current->comm, "ksoftirqd/", 10);
}

/*
 * How long did the softirq loop keep running a chain before it stopped (a
 * budget spent, a task waiting) and left the rest for later?  Runs of one
 * handle_softirqs() call follow each other within microseconds; a later
 * call starts after a tick or an interrupt at the soonest.  So the chain's
 * first batch is its first inline run and the runs that follow it closer
 * than this, up to the first run in ksoftirqd.  Called under sl_stats_lock.
 */
#define SL_BATCH_GAP_NS		(100 * NSEC_PER_USEC)
/* first batches by length: 100 us buckets up to 10 ms, then one for more */
#define SL_HIST_STEP_NS		(100 * NSEC_PER_USEC)
#define SL_HIST_BUCKETS		101
static u32 sl_batch_hist[SL_HIST_BUCKETS];	/* under sl_stats_lock */

static void sl_batch_close(struct sl_vec *v)
{
	u64 span = v->batch_end - v->batch_start;
	u64 *c = v->ctr;

	c[SL_BATCH_MIN_NS] = c[SL_BATCHES] ? min(c[SL_BATCH_MIN_NS], span) :
					     span;
	c[SL_BATCHES]++;
	c[SL_BATCH_TOTAL_NS] += span;
	c[SL_BATCH_MAX_NS] = max(c[SL_BATCH_MAX_NS], span);
	sl_batch_hist[min_t(u64, span / SL_HIST_STEP_NS, SL_HIST_BUCKETS - 1)]++;
	v->batch_open = 0;
}

static void sl_batch_track(struct sl_vec *v, u64 start, u64 end, bool first,
			   bool in_ksoftirqd)
{
	if (first) {
		v->batch_open = !in_ksoftirqd;
		v->batch_start = start;
		v->batch_end = end;
	} else if (v->batch_open) {
		if (!in_ksoftirqd && start - v->batch_end < SL_BATCH_GAP_NS)
			v->batch_end = end;
		else
			sl_batch_close(v);
	}
}

/*
 * One handler run: busy-wait, count, and say whether the chain goes on.
 * Runs in softirq context on cpu= (in hard irq only if blk-mq completed a
 * request directly, which wrong_ctx shows).
 */
static bool sl_run(struct sl_vec *v)
{
	bool in_ksoftirqd = sl_in_ksoftirqd();
	int cpu = smp_processor_id();
	unsigned long flags;
	u64 start, now, dur;
	bool more;
	u64 *c = v->ctr;

	start = ktime_get_ns();
	do {
		cpu_relax();
		now = ktime_get_ns();
	} while (now - start < v->spin_ns);
	dur = now - start;

	raw_spin_lock_irqsave(&sl_stats_lock, flags);
	c[SL_RUNS]++;
	c[SL_TOTAL_NS] += dur;
	c[SL_MAX_NS] = max(c[SL_MAX_NS], dur);
	if (!in_serving_softirq()) {
		c[SL_WRONG_CTX]++;
	} else if (in_ksoftirqd) {
		c[SL_KSOFTIRQD]++;
	} else if (current == READ_ONCE(sl_irq_task)) {
		/* the device's own thread: not an RT task it delays */
		c[SL_IRQ_THREAD]++;
	} else {
		c[SL_INLINE]++;
		if (is_idle_task(current))
			c[SL_INLINE_IDLE]++;
		else if (rt_task(current))
			c[SL_INLINE_RT]++;
	}
	if (cpu != sl_cpu)
		c[SL_WRONG_CPU]++;
	sl_batch_track(v, start, now, v->first, in_ksoftirqd);
	if (v->first) {
		u64 delay = start > v->trig_ns ? start - v->trig_ns : 0;

		c[SL_DELAY_TOTAL_NS] += delay;
		c[SL_DELAY_MAX_NS] = max(c[SL_DELAY_MAX_NS], delay);
		v->first = 0;
	}
	v->last_cpu = cpu;
	sl_last_cpu = cpu;
	if (v->left)
		v->left--;
	more = v->left && !READ_ONCE(sl_stopping);
	if (!more && v->batch_open)
		sl_batch_close(v);
	raw_spin_unlock_irqrestore(&sl_stats_lock, flags);

	return more;
}

static void sl_count(struct sl_vec *v, enum sl_ctr ctr)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&sl_stats_lock, flags);
	v->ctr[ctr]++;
	raw_spin_unlock_irqrestore(&sl_stats_lock, flags);
}

/* The chain is over: the next trigger may start another. */
static void sl_chain_end(struct sl_vec *v)
{
	/* release: the chain's updates of v come before the next trigger's */
	atomic_set_release(&v->active, 0);
}

/* ---- block: blk-mq completion in BLOCK_SOFTIRQ ---- */

static struct request *sl_blk_pop(void)
{
	struct sl_cmd *cmd = NULL;
	unsigned long flags;

	raw_spin_lock_irqsave(&sl_blk_lock, flags);
	if (!sl_stopping && !list_empty(&sl_blk_ready)) {
		cmd = list_first_entry(&sl_blk_ready, struct sl_cmd, node);
		list_del_init(&cmd->node);
	}
	raw_spin_unlock_irqrestore(&sl_blk_lock, flags);
	return cmd ? blk_mq_rq_from_pdu(cmd) : NULL;
}

/*
 * With one hardware queue mapping several CPUs and rq_affinity off,
 * blk_mq_complete_request() queues the request on this CPU's completion
 * list and raises BLOCK_SOFTIRQ, whose handler calls ->complete().
 */
static bool sl_blk_kick(void)
{
	struct request *rq = sl_blk_pop();

	if (!rq)
		return false;
	blk_mq_complete_request(rq);
	return true;
}

static blk_status_t sl_blk_queue_rq(struct blk_mq_hw_ctx *hctx,
				    const struct blk_mq_queue_data *bd)
{
	struct request *rq = bd->rq;
	struct sl_cmd *cmd = blk_mq_rq_to_pdu(rq);
	blk_status_t ret = BLK_STS_OK;
	unsigned long flags;

	blk_mq_start_request(rq);
	raw_spin_lock_irqsave(&sl_blk_lock, flags);
	if (sl_stopping)
		ret = BLK_STS_IOERR;
	else
		list_add_tail(&cmd->node, &sl_blk_ready);
	raw_spin_unlock_irqrestore(&sl_blk_lock, flags);
	return ret;
}

static void sl_blk_complete(struct request *rq)
{
	struct sl_vec *v = &sl_vecs[SL_BLOCK];
	struct request *next = NULL;
	bool more = sl_run(v);

	blk_mq_end_request(rq, BLK_STS_OK);
	/* never recurse if blk-mq called us from hard irq */
	if (more && in_serving_softirq())
		next = sl_blk_pop();
	if (next) {
		/* the next run: raises BLOCK_SOFTIRQ again */
		blk_mq_complete_request(next);
		return;
	}
	if (more)
		sl_count(v, SL_SHORT);
	sl_chain_end(v);
}

static enum blk_eh_timer_return sl_blk_timeout(struct request *rq)
{
	return BLK_EH_RESET_TIMER;
}

static const struct blk_mq_ops sl_mq_ops = {
	.queue_rq	= sl_blk_queue_rq,
	.complete	= sl_blk_complete,
	.timeout	= sl_blk_timeout,
};

static enum rq_end_io_ret sl_blk_end_io(struct request *rq, blk_status_t err)
{
	/*
	 * Free the slot before queueing the refill: a refill already past
	 * its check runs again and sees it.  Freed after queue_work(), the
	 * slot was lost whenever the refill ran in between on the other
	 * CPU, and with it every later trigger.
	 */
	atomic_dec(&sl_blk_stocked);
	if (!READ_ONCE(sl_stopping))
		queue_work(system_unbound_wq, &sl_blk_refill_work);
	/* last: the teardown waits for this count to reach zero */
	if (atomic_dec_and_test(&sl_blk_inflight))
		wake_up(&sl_blk_waitq);
	return RQ_END_IO_FREE;
}

/* Keep sl_blk_stock requests in flight: submitted, waiting for a trigger. */
static void sl_blk_refill(struct work_struct *work)
{
	struct request *rq;

	while (!READ_ONCE(sl_stopping) &&
	       atomic_read(&sl_blk_stocked) < sl_blk_stock) {
		rq = blk_mq_alloc_request(sl_blk_q, REQ_OP_DRV_IN, 0);
		if (IS_ERR(rq)) {
			pr_warn_ratelimited("block: no request: %ld\n",
					    PTR_ERR(rq));
			return;
		}
		rq->end_io = sl_blk_end_io;
		atomic_inc(&sl_blk_stocked);
		atomic_inc(&sl_blk_inflight);
		blk_execute_rq_nowait(rq, false);
	}
}

static int sl_blk_init(void)
{
	struct request_queue *q;
	int ret;

	sl_tag_set.ops = &sl_mq_ops;
	sl_tag_set.nr_hw_queues = 1;
	sl_tag_set.queue_depth = sl_burst;
	sl_tag_set.numa_node = NUMA_NO_NODE;
	sl_tag_set.cmd_size = sizeof(struct sl_cmd);
	ret = blk_mq_alloc_tag_set(&sl_tag_set);
	if (ret)
		return ret;

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
	q = blk_mq_alloc_queue(&sl_tag_set, NULL, NULL);
#else
	q = blk_mq_init_queue(&sl_tag_set);
#endif
	if (IS_ERR(q)) {
		blk_mq_free_tag_set(&sl_tag_set);
		return PTR_ERR(q);
	}
	/* rq_affinity=0: complete on the CPU that signals the completion */
	blk_queue_flag_clear(QUEUE_FLAG_SAME_COMP, q);
	blk_queue_rq_timeout(q, SL_BLK_TIMEOUT);
	sl_blk_q = q;
	sl_blk_stock = min(sl_burst, sl_tag_set.queue_depth);
	sl_blk_refill(NULL);
	return 0;
}

/* End the requests still waiting for a trigger. */
static void sl_blk_drain(void)
{
	struct sl_cmd *cmd, *tmp;
	unsigned long flags;
	LIST_HEAD(list);

	raw_spin_lock_irqsave(&sl_blk_lock, flags);
	list_splice_init(&sl_blk_ready, &list);
	raw_spin_unlock_irqrestore(&sl_blk_lock, flags);

	list_for_each_entry_safe(cmd, tmp, &list, node) {
		list_del_init(&cmd->node);
		blk_mq_end_request(blk_mq_rq_from_pdu(cmd), BLK_STS_IOERR);
	}
}

/* After sl_stop(): no chain starts, queue_rq() fails new requests. */
static void sl_blk_exit(void)
{
	unsigned int waited = 0;

	cancel_work_sync(&sl_blk_refill_work);
	for (;;) {
		sl_blk_drain();
		if (wait_event_timeout(sl_blk_waitq,
				       !atomic_read(&sl_blk_inflight), HZ / 10))
			break;
		if (++waited % 100 == 0)
			pr_warn("block: waiting for %d requests\n",
				atomic_read(&sl_blk_inflight));
	}
	/* end_io may have queued it again before it saw sl_stopping */
	cancel_work_sync(&sl_blk_refill_work);
	blk_mq_destroy_queue(sl_blk_q);
	blk_put_queue(sl_blk_q);
	blk_mq_free_tag_set(&sl_tag_set);
}

/* ---- net_rx: NAPI poll in NET_RX_SOFTIRQ ---- */

/*
 * With one instance, each poll uses all its budget while the chain goes on,
 * so net_rx_action() leaves it for the next pass and raises NET_RX again:
 * one poll per pass.  With several (napis=), every instance is polled once
 * in the same pass and completes: the pass is a run of back-to-back polls,
 * the case where net_rx_action() may stop between two polls.
 */
static int sl_napi_poll(struct napi_struct *napi, int budget)
{
	struct sl_vec *v = &sl_vecs[SL_NET_RX];
	bool more;

	if (!budget)
		return 0;
	more = v->left && sl_run(v);
	if (more && sl_napis == 1)
		return budget;
	napi_complete_done(napi, 0);
	if (!more)
		sl_chain_end(v);
	return 0;
}

static bool sl_napi_kick(void)
{
	bool started = false;
	unsigned int i;

	for (i = 0; i < sl_napis; i++) {
		if (napi_schedule_prep(&sl_napi[i])) {
			__napi_schedule(&sl_napi[i]);
			started = true;
		}
	}
	return started;
}

static int sl_napi_init(void)
{
	unsigned int i;

	/* NAPI needs a device; a dummy one has no queues and no name */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
	sl_ndev = alloc_netdev_dummy(0);
#else
	sl_ndev = kzalloc(sizeof(*sl_ndev), GFP_KERNEL);
	if (sl_ndev)
		init_dummy_netdev(sl_ndev);
#endif
	if (!sl_ndev)
		return -ENOMEM;
	for (i = 0; i < sl_napis; i++) {
		netif_napi_add(sl_ndev, &sl_napi[i], sl_napi_poll);
		napi_enable(&sl_napi[i]);
	}
	return 0;
}

static void sl_napi_exit(void)
{
	unsigned int i;

	for (i = 0; i < sl_napis; i++) {
		napi_disable(&sl_napi[i]);
		netif_napi_del(&sl_napi[i]);
	}
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
	free_netdev(sl_ndev);
#else
	kfree(sl_ndev);
#endif
	sl_ndev = NULL;
}

/* ---- irq_poll: irq_poll callback in IRQ_POLL_SOFTIRQ ---- */

static int sl_iop_poll(struct irq_poll *iop, int weight)
{
	struct sl_vec *v = &sl_vecs[SL_IRQ_POLL];

	/* weight used up: polled again in the next IRQ_POLL_SOFTIRQ run */
	if (v->left && sl_run(v))
		return weight;
	irq_poll_complete(iop);
	sl_chain_end(v);
	return 0;
}

static bool sl_iop_kick(void)
{
	if (test_bit(IRQ_POLL_F_SCHED, &sl_iop.state))
		return false;
	irq_poll_sched(&sl_iop);
	return true;
}

/* ---- tasklet, hi: TASKLET_SOFTIRQ, HI_SOFTIRQ ---- */

static void sl_tasklet_kick(struct sl_vec *v)
{
	if (v == &sl_vecs[SL_HI])
		tasklet_hi_schedule(&v->tasklet);
	else
		tasklet_schedule(&v->tasklet);
}

static void sl_tasklet_fn(struct tasklet_struct *t)
{
	struct sl_vec *v = from_tasklet(v, t, tasklet);

	if (v->left && sl_run(v)) {
		sl_tasklet_kick(v);
		return;
	}
	sl_chain_end(v);
}

/* ---- triggers ---- */

static bool sl_kick(struct sl_vec *v)
{
	switch (v - sl_vecs) {
	case SL_BLOCK:
		return sl_blk_kick();
	case SL_NET_RX:
		return sl_napi_kick();
	case SL_IRQ_POLL:
		return sl_iop_kick();
	default:
		sl_tasklet_kick(v);
		return true;
	}
}

/*
 * On cpu=, in the timer's hard irq or in the interrupt thread: start one
 * chain in every selected vector.
 */
static void sl_trigger(u64 now)
{
	bool started;
	int i;

	for (i = 0; i < SL_NR_VEC; i++) {
		struct sl_vec *v = &sl_vecs[i];

		if (!v->ready || READ_ONCE(sl_stopping))
			continue;
		started = false;
		if (!atomic_cmpxchg_acquire(&v->active, 0, 1)) {
			v->left = i == SL_NET_RX && sl_napis > 1 ?
				  sl_napis : sl_burst;
			v->first = 1;
			v->trig_ns = now;
			started = sl_kick(v);
			if (!started)
				sl_chain_end(v);
		}
		sl_count(v, started ? SL_TRIGGERS : SL_MISSED);
	}
}

/*
 * The threaded interrupt: the timer's hard irq only wakes the thread, which
 * starts the chains with bottom halves disabled, as a driver's threaded
 * handler does around napi_schedule() or a request's completion.  The
 * softirqs they raise run at local_bh_enable(), in this thread.
 */
static irqreturn_t sl_irq_thread_fn(int irq, void *dev_id)
{
	WRITE_ONCE(sl_irq_task, current);
	local_bh_disable();
	sl_trigger(READ_ONCE(sl_fired_ns));
	local_bh_enable();
	return IRQ_HANDLED;
}

/* Nothing is wired: the affinity only places the thread (on cpu=). */
static int sl_irq_set_affinity(struct irq_data *d, const struct cpumask *mask,
			       bool force)
{
	irq_data_update_effective_affinity(d, mask);
	return IRQ_SET_MASK_OK;
}

static const struct irq_chip sl_irq_chip = {
	.name			= KBUILD_MODNAME,
	.irq_set_affinity	= sl_irq_set_affinity,
};

/*
 * In the timer's hard irq.  A chain's wait counts from here, so with
 * irq=thread it includes the thread's wake-up; fires that come while the
 * thread is still pending merge into its next run (fires > triggers +
 * missed).
 */
static void sl_fire(void)
{
	u64 now = ktime_get_ns();
	unsigned long flags;

	raw_spin_lock_irqsave(&sl_stats_lock, flags);
	sl_fires++;
	raw_spin_unlock_irqrestore(&sl_stats_lock, flags);
	if (sl_threaded) {
		WRITE_ONCE(sl_fired_ns, now);
		generic_handle_irq(sl_irq);
	} else {
		sl_trigger(now);
	}
}

static enum hrtimer_restart sl_period_fn(struct hrtimer *timer)
{
	if (READ_ONCE(sl_stopping))
		return HRTIMER_NORESTART;
	sl_fire();
	hrtimer_forward_now(timer, ns_to_ktime(sl_period_ns));
	return HRTIMER_RESTART;
}

static enum hrtimer_restart sl_oneshot_fn(struct hrtimer *timer)
{
	if (!READ_ONCE(sl_stopping))
		sl_fire();
	return HRTIMER_NORESTART;
}

struct sl_arm_req {
	struct hrtimer *timer;
	ktime_t when;
};

static void sl_arm_here(void *info)
{
	struct sl_arm_req *req = info;

	hrtimer_start(req->timer, req->when, HRTIMER_MODE_ABS_PINNED_HARD);
}

/* Pinned timers stay on the CPU that starts them: start them on cpu=. */
static int sl_arm(struct hrtimer *timer, ktime_t when)
{
	struct sl_arm_req req = { .timer = timer, .when = when };

	return smp_call_function_single(sl_cpu, sl_arm_here, &req, 1);
}

/* ---- debugfs ---- */

/* "<delay_us>": fire after delay_us; "@<ns>": fire at CLOCK_MONOTONIC ns */
static ssize_t sl_trigger_write(struct file *file, const char __user *ubuf,
				size_t count, loff_t *ppos)
{
	ktime_t now = ktime_get();
	char buf[32], *s;
	ktime_t when;
	u64 val;
	int ret;

	if (!count || count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	s = strim(buf);
	if (*s == '@') {
		ret = kstrtou64(s + 1, 10, &val);
		if (ret)
			return ret;
		if (val > ktime_to_ns(now) + SL_MAX_DELAY_US * NSEC_PER_USEC)
			return -ERANGE;
		when = ns_to_ktime(val);
	} else {
		ret = kstrtou64(s, 10, &val);
		if (ret)
			return ret;
		if (val > SL_MAX_DELAY_US)
			return -ERANGE;
		when = ktime_add_us(now, val);
	}
	if (READ_ONCE(sl_stopping))
		return -ENODEV;
	ret = sl_arm(&sl_oneshot_timer, when);
	return ret ? ret : count;
}

static const struct file_operations sl_trigger_fops = {
	.owner	= THIS_MODULE,
	.open	= simple_open,
	.write	= sl_trigger_write,
	.llseek	= noop_llseek,
};

static ssize_t sl_reset_write(struct file *file, const char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	unsigned long flags;
	int i;

	raw_spin_lock_irqsave(&sl_stats_lock, flags);
	for (i = 0; i < SL_NR_VEC; i++) {
		memset(sl_vecs[i].ctr, 0, sizeof(sl_vecs[i].ctr));
		sl_vecs[i].last_cpu = -1;
	}
	memset(sl_batch_hist, 0, sizeof(sl_batch_hist));
	sl_fires = 0;
	sl_last_cpu = -1;
	raw_spin_unlock_irqrestore(&sl_stats_lock, flags);
	return count;
}

static const struct file_operations sl_reset_fops = {
	.owner	= THIS_MODULE,
	.open	= simple_open,
	.write	= sl_reset_write,
	.llseek	= noop_llseek,
};

/* The counters of all selected vectors: maxima of maxima, sums of the rest. */
static void sl_snapshot(u64 *sum, u64 *fires, int *last_cpu)
{
	unsigned long flags;
	int i, j;

	memset(sum, 0, SL_NR_CTR * sizeof(*sum));
	raw_spin_lock_irqsave(&sl_stats_lock, flags);
	for (i = 0; i < SL_NR_VEC; i++) {
		u64 *c = sl_vecs[i].ctr;

		for (j = 0; j < SL_NR_CTR; j++) {
			if (j == SL_MAX_NS || j == SL_DELAY_MAX_NS ||
			    j == SL_BATCH_MAX_NS)
				sum[j] = max(sum[j], c[j]);
			else if (j == SL_BATCH_MIN_NS)
				continue;
			else
				sum[j] += c[j];
		}
		if (c[SL_BATCHES] && (!sum[SL_BATCH_MIN_NS] ||
				      c[SL_BATCH_MIN_NS] < sum[SL_BATCH_MIN_NS]))
			sum[SL_BATCH_MIN_NS] = c[SL_BATCH_MIN_NS];
	}
	*fires = sl_fires;
	*last_cpu = sl_last_cpu;
	raw_spin_unlock_irqrestore(&sl_stats_lock, flags);
}

static int sl_stats_show(struct seq_file *m, void *unused)
{
	u64 sum[SL_NR_CTR], fires;
	int last_cpu, j;

	sl_snapshot(sum, &fires, &last_cpu);
	seq_printf(m,
		   "vector=%s spin_us=%u storm_spin_us=%u period_us=%u cpu=%d burst=%u napis=%u irq=%s fires=%llu",
		   sl_vector_str, sl_spin_us, sl_storm_spin_us, sl_period_us,
		   sl_cpu, sl_burst, sl_napis, sl_threaded ? "thread" : "hard",
		   fires);
	for (j = 0; j < SL_NR_CTR; j++)
		seq_printf(m, " %s=%llu", sl_ctr_names[j], sum[j]);
	seq_printf(m, " last_cpu=%d\n", last_cpu);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sl_stats);

static int sl_vectors_show(struct seq_file *m, void *unused)
{
	u64 ctr[SL_NR_CTR];
	unsigned long flags;
	int last_cpu, i, j;

	for (i = 0; i < SL_NR_VEC; i++) {
		struct sl_vec *v = &sl_vecs[i];

		if (!v->enabled)
			continue;
		raw_spin_lock_irqsave(&sl_stats_lock, flags);
		memcpy(ctr, v->ctr, sizeof(ctr));
		last_cpu = v->last_cpu;
		raw_spin_unlock_irqrestore(&sl_stats_lock, flags);

		seq_printf(m, "name=%s", v->name);
		for (j = 0; j < SL_NR_CTR; j++)
			seq_printf(m, " %s=%llu", sl_ctr_names[j], ctr[j]);
		seq_printf(m, " last_cpu=%d\n", last_cpu);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sl_vectors);

/* "<from_us> <count>" per non-empty bucket; the last one is open-ended */
static int sl_batch_hist_show(struct seq_file *m, void *unused)
{
	u32 hist[SL_HIST_BUCKETS];
	unsigned long flags;
	int i;

	raw_spin_lock_irqsave(&sl_stats_lock, flags);
	memcpy(hist, sl_batch_hist, sizeof(hist));
	raw_spin_unlock_irqrestore(&sl_stats_lock, flags);

	for (i = 0; i < SL_HIST_BUCKETS; i++)
		if (hist[i])
			seq_printf(m, "%llu %u\n",
				   (u64)i * SL_HIST_STEP_NS / NSEC_PER_USEC, hist[i]);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sl_batch_hist);

static int sl_ctr_get(void *data, u64 *val)
{
	unsigned long idx = (unsigned long)data;
	u64 sum[SL_NR_CTR], fires;
	int last_cpu;

	sl_snapshot(sum, &fires, &last_cpu);
	*val = idx == SL_FIRES ? fires : sum[idx];
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(sl_ctr_fops, sl_ctr_get, NULL, "%llu\n");

static int sl_last_cpu_get(void *data, u64 *val)
{
	u64 sum[SL_NR_CTR], fires;
	int last_cpu;

	sl_snapshot(sum, &fires, &last_cpu);
	*val = (s64)last_cpu;
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(sl_last_cpu_fops, sl_last_cpu_get, NULL, "%lld\n");

static void sl_debugfs_init(void)
{
	unsigned long j;

	sl_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("trigger", 0200, sl_dir, NULL, &sl_trigger_fops);
	debugfs_create_file("reset", 0200, sl_dir, NULL, &sl_reset_fops);
	debugfs_create_file("stats", 0444, sl_dir, NULL, &sl_stats_fops);
	debugfs_create_file("vectors", 0444, sl_dir, NULL, &sl_vectors_fops);
	debugfs_create_file("batch_hist", 0444, sl_dir, NULL,
			    &sl_batch_hist_fops);
	for (j = 0; j < SL_NR_CTR; j++)
		debugfs_create_file_unsafe(sl_ctr_names[j], 0444, sl_dir,
					   (void *)j, &sl_ctr_fops);
	debugfs_create_file_unsafe("fires", 0444, sl_dir,
				   (void *)(unsigned long)SL_FIRES,
				   &sl_ctr_fops);
	debugfs_create_file_unsafe("last_cpu", 0444, sl_dir, NULL,
				   &sl_last_cpu_fops);
}

/* ---- load and unload ---- */

static int __init sl_parse_vectors(void)
{
	char *buf, *s, *tok;
	int i, n = 0;

	buf = kstrdup(sl_vector_param ? sl_vector_param : "", GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	s = buf;
	while ((tok = strsep(&s, ","))) {
		tok = strim(tok);
		if (!*tok)
			continue;
		n++;
		if (!strcmp(tok, "storm")) {
			sl_vecs[SL_TASKLET].enabled = 1;
			sl_vecs[SL_HI].enabled = 1;
			continue;
		}
		for (i = 0; i < SL_NR_VEC; i++)
			if (!strcmp(tok, sl_vecs[i].name))
				break;
		if (i == SL_NR_VEC) {
			pr_err("vector: unknown '%s'; valid: comma-separated block, net_rx, irq_poll, tasklet, hi, storm\n",
			       tok);
			kfree(buf);
			return -EINVAL;
		}
		sl_vecs[i].enabled = 1;
	}
	kfree(buf);
	if (!n) {
		pr_err("vector: empty; valid: comma-separated block, net_rx, irq_poll, tasklet, hi, storm\n");
		return -EINVAL;
	}

	for (i = 0; i < SL_NR_VEC; i++) {
		if (!sl_vecs[i].enabled)
			continue;
		if (sl_vector_str[0])
			strlcat(sl_vector_str, ",", sizeof(sl_vector_str));
		strlcat(sl_vector_str, sl_vecs[i].name, sizeof(sl_vector_str));
	}
	return 0;
}

static int __init sl_check_params(void)
{
	unsigned int longest = 0, min_period;
	const char *irq_mode;
	int ret, i;

	ret = sl_parse_vectors();
	if (ret)
		return ret;
	if (sl_spin_us < 1 || sl_spin_us > SL_MAX_SPIN_US) {
		pr_err("spin_us: %u out of range 1..%u\n",
		       sl_spin_us, SL_MAX_SPIN_US);
		return -EINVAL;
	}
	if (sl_storm_spin_us < 1 || sl_storm_spin_us > SL_MAX_SPIN_US) {
		pr_err("storm_spin_us: %u out of range 1..%u\n",
		       sl_storm_spin_us, SL_MAX_SPIN_US);
		return -EINVAL;
	}
	if (sl_burst < 1 || sl_burst > SL_MAX_BURST) {
		pr_err("burst: %u out of range 1..%u\n",
		       sl_burst, SL_MAX_BURST);
		return -EINVAL;
	}
	if (sl_napis < 1 || sl_napis > SL_MAX_NAPIS) {
		pr_err("napis: %u out of range 1..%u\n", sl_napis, SL_MAX_NAPIS);
		return -EINVAL;
	}
	if (sl_napis > 1 && sl_burst != 1) {
		pr_err("napis: %u instances poll once each per trigger, so burst must be 1 (is %u)\n",
		       sl_napis, sl_burst);
		return -EINVAL;
	}
	irq_mode = sl_irq_param ? sl_irq_param : "";
	if (!strcmp(irq_mode, "thread")) {
		sl_threaded = true;
	} else if (strcmp(irq_mode, "hard")) {
		pr_err("irq: unknown '%s'; valid: hard, thread\n", irq_mode);
		return -EINVAL;
	}
	if (sl_cpu < 0 || sl_cpu >= nr_cpu_ids || !cpu_online(sl_cpu)) {
		pr_err("cpu: %d is not an online CPU; online: %*pbl\n",
		       sl_cpu, cpumask_pr_args(cpu_online_mask));
		return -EINVAL;
	}

	for (i = 0; i < SL_NR_VEC; i++) {
		struct sl_vec *v = &sl_vecs[i];

		v->spin_ns = (u64)(i >= SL_TASKLET ? sl_storm_spin_us :
				   sl_spin_us) * NSEC_PER_USEC;
		v->last_cpu = -1;
		if (v->enabled)
			longest = max(longest, (unsigned int)(v->spin_ns /
							      NSEC_PER_USEC));
	}
	min_period = max(SL_MIN_PERIOD_US, longest);
	if (sl_period_us &&
	    (sl_period_us < min_period || sl_period_us > SL_MAX_PERIOD_US)) {
		pr_err("period_us: %u out of range; valid: 0 (on demand) or %u..%u (at least %u and the longest selected spin)\n",
		       sl_period_us, min_period, SL_MAX_PERIOD_US,
		       SL_MIN_PERIOD_US);
		return -EINVAL;
	}
	sl_period_ns = (u64)sl_period_us * NSEC_PER_USEC;

	/* blk_mq_complete_request_remote() completes in place if nr_ctx == 1 */
	if (sl_vecs[SL_BLOCK].enabled && num_possible_cpus() < 2) {
		pr_err("vector: block needs 2 or more possible CPUs; with one, blk-mq completes in hard irq, not in BLOCK_SOFTIRQ\n");
		return -EINVAL;
	}
	return 0;
}

/*
 * irq=thread: an interrupt descriptor of our own, fired only by the timer.
 * It has no owner: irq_alloc_desc() would make this module its owner, and
 * requesting it would then pin the module for good.  The thread follows the
 * interrupt's affinity; IRQ_MOVE_PCNTXT lets that be set now rather than
 * at a next interrupt's ack, which this chip has none of.
 */
static int __init sl_irq_init(void)
{
	int irq, ret;

	irq = __irq_alloc_descs(-1, 1, 1, NUMA_NO_NODE, NULL, NULL);
	if (irq < 0)
		return irq;
	irq_set_chip_and_handler(irq, &sl_irq_chip, handle_simple_irq);
	irq_set_status_flags(irq, IRQ_MOVE_PCNTXT);
	ret = request_threaded_irq(irq, NULL, sl_irq_thread_fn, IRQF_ONESHOT,
				   KBUILD_MODNAME, &sl_irq);
	if (ret)
		goto err_free_desc;
	ret = irq_set_affinity(irq, cpumask_of(sl_cpu));
	if (ret)
		goto err_free_irq;
	sl_irq = irq;
	return 0;

err_free_irq:
	free_irq(irq, &sl_irq);
err_free_desc:
	irq_free_desc(irq);
	return ret;
}

/* After the timers stopped: waits for a thread still starting chains. */
static void sl_irq_exit(void)
{
	if (sl_irq < 0)
		return;
	free_irq(sl_irq, &sl_irq);
	irq_free_desc(sl_irq);
	sl_irq = -1;
	WRITE_ONCE(sl_irq_task, NULL);
}

/* Start nothing new; wait for the trigger timers. */
static void sl_stop(void)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&sl_blk_lock, flags);
	WRITE_ONCE(sl_stopping, true);
	raw_spin_unlock_irqrestore(&sl_blk_lock, flags);
	hrtimer_cancel(&sl_period_timer);
	hrtimer_cancel(&sl_oneshot_timer);
}

/* After sl_stop(): every chain ends at its next run. */
static void sl_vectors_exit(void)
{
	int i;

	for (i = SL_NR_VEC - 1; i >= 0; i--) {
		struct sl_vec *v = &sl_vecs[i];

		if (!v->ready)
			continue;
		switch (i) {
		case SL_BLOCK:
			sl_blk_exit();
			break;
		case SL_NET_RX:
			sl_napi_exit();
			break;
		case SL_IRQ_POLL:
			irq_poll_disable(&sl_iop);
			break;
		default:
			tasklet_kill(&v->tasklet);
			break;
		}
		v->ready = 0;
	}
}

static int __init sl_vectors_init(void)
{
	int ret = 0;
	int i;

	for (i = 0; i < SL_NR_VEC; i++) {
		struct sl_vec *v = &sl_vecs[i];

		if (!v->enabled)
			continue;
		switch (i) {
		case SL_BLOCK:
			ret = sl_blk_init();
			break;
		case SL_NET_RX:
			ret = sl_napi_init();
			break;
		case SL_IRQ_POLL:
			irq_poll_init(&sl_iop, SL_IRQ_POLL_WEIGHT, sl_iop_poll);
			break;
		default:
			tasklet_setup(&v->tasklet, sl_tasklet_fn);
			break;
		}
		if (ret) {
			pr_err("%s: setup failed: %d\n", v->name, ret);
			return ret;
		}
		v->ready = 1;
	}
	return 0;
}

static int __init sl_init(void)
{
	int ret;

	ret = sl_check_params();
	if (ret)
		return ret;

	hrtimer_init(&sl_period_timer, CLOCK_MONOTONIC,
		     HRTIMER_MODE_ABS_PINNED_HARD);
	sl_period_timer.function = sl_period_fn;
	hrtimer_init(&sl_oneshot_timer, CLOCK_MONOTONIC,
		     HRTIMER_MODE_ABS_PINNED_HARD);
	sl_oneshot_timer.function = sl_oneshot_fn;

	ret = sl_vectors_init();
	if (ret)
		goto fail;
	if (sl_threaded) {
		ret = sl_irq_init();
		if (ret) {
			pr_err("irq: cannot set up the threaded interrupt: %d\n",
			       ret);
			goto fail;
		}
	}
	sl_debugfs_init();
	if (sl_period_us) {
		ret = sl_arm(&sl_period_timer,
			     ktime_add_ns(ktime_get(), sl_period_ns));
		if (ret) {
			pr_err("cpu: cannot start the timer on CPU %d: %d\n",
			       sl_cpu, ret);
			goto fail;
		}
	}
	pr_info("vector=%s spin_us=%u storm_spin_us=%u period_us=%u cpu=%d burst=%u napis=%u irq=%s\n",
		sl_vector_str, sl_spin_us, sl_storm_spin_us, sl_period_us,
		sl_cpu, sl_burst, sl_napis, sl_threaded ? "thread" : "hard");
	return 0;

fail:
	debugfs_remove_recursive(sl_dir);
	sl_stop();
	sl_irq_exit();
	sl_vectors_exit();
	return ret;
}

static void __exit sl_exit(void)
{
	/* waits for writers of trigger, so no timer is armed after this */
	debugfs_remove_recursive(sl_dir);
	sl_stop();
	sl_irq_exit();
	sl_vectors_exit();
	pr_info("unloaded\n");
}

module_init(sl_init);
module_exit(sl_exit);

MODULE_DESCRIPTION("Long and short softirq load on one CPU, from a hard-irq timer or a threaded interrupt");
MODULE_LICENSE("GPL");
