"""What the CPU did between an RT task's wake-up and its run, from a trace.

The guest's trace phase (guest/plans/scenario.sh) runs cyclictest again
with scheduler and irq events traced into a ring buffer that holds the
whole run, saved with `trace-cmd extract` (trace.dat, opened by
KernelShark).  Here the host turns it into events with `trace-cmd
report`, and turns every sample of cyclictest's RT threads into a window:
from the expiry its timer was programmed for (hrtimer_start's expires,
the time cyclictest expects to wake) to the thread's next sleep, so a
late timer interrupt is inside it and the windows are cyclictest's own
samples, one for one (samples()).  Each window over the scenario's
threshold is split, on the CPU the task ran on and on the CPU it was
woken on, into softirq vectors (inline or in ksoftirqd), hard irqs,
other tasks and idle.  The largest share on the task's CPU is the cause.

Why the whole run and not cyclictest's break trace (-b): a break ends
cyclictest at the first sample over the threshold, and while the guest
is still widening the threads' affinity the first samples are pinned
ones; a full trace explains the worst wake-ups of a whole fair run.
"""
import bisect
import math
from collections import Counter, defaultdict
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..base.log import LabError
from ..run.settings import STALL_US

# Softirq vectors in kernel (and /proc/softirqs) order.
VECTORS = ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL",
           "TASKLET", "SCHED", "HRTIMER", "RCU"]
LINE = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]"
                  r"(?:\s+\S+)?\s+(?P<ts>\d+\.\d+):\s+(?P<name>\w+):"
                  r"\s*(?P<rest>.*)$")
# The guest plan's marker once cyclictest's threads may run on any CPU;
# samples before it pair with cyclictest's but are never explained.
WIDENED = "lab: affinity widened"
RT_PRIO = 100             # trace prio below this: a real-time task
KEYVAL = re.compile(r"(\w+)=(\S+)")
# trace-cmd's sched plugin: "prev:pid [prio] S ==> next:pid [prio]"
SWITCH = re.compile(r"(?P<prev_comm>.+?):(?P<prev_pid>\d+) \[-?\d+\] "
                    r"(?P<prev_state>\S+) ==> (?P<next_comm>.+?):"
                    r"(?P<next_pid>\d+) \[-?\d+\]")
# Hard interrupts: device handlers and the x86 vectors the lab traces
# (local timer, reschedule and function-call IPIs).
HARD_IRQS = ("irq_handler", "local_timer", "reschedule",
             "call_function_single")
STALLED = "vCPU stalled in an interrupt"
# Shares that mean the emulator did not run the vCPU (see _cause); "no
# activity" may also be a kernel running with interrupts off.
EMULATOR = (STALLED,)
WAKEUP = re.compile(r"(?P<comm>.+?):(?P<pid>\d+) \[-?\d+\]"
                    r"(?: success=\d+)? CPU:(?P<target_cpu>\d+)")
# napi:napi_poll, "napi poll on napi struct 0x... for device eth0 work 5
# budget 64": the packets one NAPI poll took
NAPI = re.compile(r"work (?P<work>\d+) budget (?P<budget>\d+)")
# net_rx_action()'s packet budget per run (the netdev_budget sysctl's
# default, which the guest keeps)
NETDEV_BUDGET = 300


def is_idle(comm: str) -> bool:
    """The idle task: swapper/N, or <idle> as trace-cmd names pid 0."""
    return comm.startswith("swapper") or comm == "<idle>"


@dataclass
class Event:
    ts: float            # seconds, guest clock
    cpu: int
    comm: str            # the task current on `cpu`
    pid: int
    name: str
    args: dict = field(default_factory=dict)


def _args(name: str, rest: str) -> dict:
    if name == "sched_switch" and "==>" in rest:
        m = SWITCH.search(rest)
        if m:
            return m.groupdict()
    if name in ("sched_wakeup", "sched_waking") and "CPU:" in rest:
        m = WAKEUP.search(rest)
        if m:
            return m.groupdict()
    if name == "sched_switch":           # raw format
        out = dict(KEYVAL.findall(rest))
        if "==>" in rest:
            out["prev_state"] = rest.split("==>")[0].split()[-1]
        return out
    if name == "napi_poll":
        m = NAPI.search(rest)
        return {k: int(v) for k, v in m.groupdict().items()} if m else {}
    out = dict(KEYVAL.findall(rest))
    if name.startswith("softirq_"):
        m = re.search(r"action=(\w+)", rest)
        out["vec"] = m.group(1) if m else VECTORS[int(out.get("vec", 0))]
    if name == "print":
        out["text"] = rest
    return out


def parse(text: str) -> list:
    events = []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        name = m.group("name")
        events.append(Event(float(m.group("ts")), int(m.group("cpu")),
                            m.group("comm").strip(), int(m.group("pid")),
                            name, _args(name, m.group("rest"))))
    return events


def report_text(dat: Path) -> str:
    """`trace-cmd report` of a saved trace, kept beside it as .txt."""
    txt = dat.with_suffix(".txt")
    if txt.is_file() and txt.stat().st_mtime >= dat.stat().st_mtime:
        return txt.read_text()
    try:
        r = subprocess.run(["trace-cmd", "report", "-i", str(dat)],
                           capture_output=True, text=True, timeout=300)
    except OSError as e:
        raise LabError(f"cannot run trace-cmd ({e}): install Debian package "
                       f"trace-cmd (`make deps`)") from None
    if r.returncode != 0:
        raise LabError(f"{dat}: trace-cmd report failed: "
                       f"{r.stderr.strip()[:300]}")
    txt.write_text(r.stdout)
    return r.stdout


def _pid(args: dict, key: str = "pid") -> int:
    try:
        return int(args.get(key, -1))
    except ValueError:
        return -1


def hard_edge(name: str) -> str:
    """'entry' or 'exit' for a hard interrupt event, else ''."""
    for irq in HARD_IRQS:
        if name in (irq + "_entry", irq + "_exit"):
            return name[len(irq) + 1:]
    return ""


def timeline(events: list, stall_us: float = STALL_US) -> dict:
    """{cpu: Segments}: what each CPU did, from one pass over the trace.

    A segment's label is "BLOCK softirq", "BLOCK softirq in ksoftirqd/0",
    "hard irq" (STALLED when one lasts over `stall_us`), a task's comm,
    "idle" or "unknown" (before the CPU's first event); its pid is the
    task current on the CPU.  A softirq belongs to the task it runs in:
    PREEMPT_RT can switch away in the middle of one, and the task
    switched to is not in it.
    """
    state = {}
    out = {}
    held = {}           # task (pid; the idle tasks per CPU) -> its softirq
    for e in events:
        s = state.get(e.cpu)
        if s is None:
            s = state[e.cpu] = {"task": None, "pid": -1, "soft": None,
                                "hard": 0, "since": e.ts}
            out[e.cpu] = Segments(stall_us=stall_us)
            if e.name == "sched_switch":
                s["task"], s["pid"] = e.args.get("prev_comm", e.comm), \
                    _pid(e.args, "prev_pid")
            else:
                s["task"], s["pid"] = e.comm, e.pid
        edge = hard_edge(e.name)
        if e.name in ("softirq_entry", "softirq_exit", "sched_switch") or \
                edge:
            out[e.cpu].add(s["since"], e.ts, _label(s), s["pid"])
            s["since"] = e.ts
        if e.name == "softirq_entry":
            s["soft"] = e.args["vec"]
        elif e.name == "softirq_exit":
            s["soft"] = None
        elif edge == "entry":
            s["hard"] += 1
        elif edge == "exit":
            s["hard"] = max(0, s["hard"] - 1)
        elif e.name == "sched_switch":
            if s["soft"] is not None:
                held[_task_key(s["pid"], e.cpu)] = s["soft"]
            s["task"], s["pid"] = e.args.get("next_comm", "?"), \
                _pid(e.args, "next_pid")
            s["soft"] = held.pop(_task_key(s["pid"], e.cpu), None)
    for cpu, s in state.items():
        out[cpu].add(s["since"], float("inf"), _label(s), s["pid"])
    return out


def _task_key(pid: int, cpu: int):
    return pid if pid > 0 else (pid, cpu)


def _label(s: dict) -> str:
    if s["hard"]:
        return "hard irq"
    if s["soft"] is not None:
        if s["task"] and s["task"].startswith("ksoftirqd/"):
            return f"{s['soft']} softirq in {s['task']}"
        return f"{s['soft']} softirq"
    if s["task"] is None:
        return "unknown"
    return "idle" if is_idle(s["task"]) else s["task"]


@dataclass
class Segments:
    """One CPU's activity as consecutive [start, end) segments."""
    starts: list = field(default_factory=list)
    ends: list = field(default_factory=list)
    labels: list = field(default_factory=list)
    pids: list = field(default_factory=list)
    stall_us: float = STALL_US

    def add(self, a: float, b: float, label: str, pid: int) -> None:
        if b <= a:
            return
        if label == "hard irq" and (b - a) * 1e6 > self.stall_us:
            label = STALLED
        self.starts.append(a)
        self.ends.append(b)
        self.labels.append(label)
        self.pids.append(pid)


OWN = "the task itself"


def occupancy(segs: Segments, t0: float, t1: float,
              woken: int = -1, ran: float = None) -> dict:
    """Microseconds of [t0, t1] per activity on one CPU; time in which
    the woken task (pid `woken`) was current but showed nothing is "no
    activity" before it was switched in (`ran`) and OWN after."""
    shares = {}
    i = max(0, bisect.bisect_right(segs.starts, t0) - 1)
    while i < len(segs.starts) and segs.starts[i] < t1:
        a, b = max(segs.starts[i], t0), min(segs.ends[i], t1)
        if b > a:
            label = segs.labels[i]
            if segs.pids[i] == woken and label not in ("hard irq", STALLED) \
                    and "softirq" not in label:
                label = OWN if ran is not None and segs.starts[i] >= ran \
                    else "no activity"
            shares[label] = shares.get(label, 0.0) + (b - a) * 1e6
        i += 1
    if t0 < (segs.starts[0] if segs.starts else t1):
        shares["unknown"] = shares.get("unknown", 0.0) + \
            (min(t1, segs.starts[0] if segs.starts else t1) - t0) * 1e6
    return shares


# The function of a sleeping task's hrtimer (clock_nanosleep); the same
# thread's context also restarts the tick's timer from interrupts.
SLEEP_TIMER = "hrtimer_wakeup"


@dataclass
class Window:
    """One sample of a cyclictest RT thread, as the trace saw it."""
    pid: int
    t0: float            # the expiry its timer was programmed for, on
                         # the trace clock of the CPU where it ends
    fired: Event         # hrtimer_expire_entry of that timer
    waking: Event        # sched_waking of the thread, from the timer
    end: Event           # the thread's next sleep (hrtimer_start): it ran
    run: Event = None    # the sched_switch that ran it (None: it was
                         # still current when its timer fired)
    free: bool = True    # after the affinity marker (threads set free)
    late_us: int = 0     # from the expiry to the timer's interrupt
    lost: bool = False   # a sleep whose wake-up the trace did not show:
                         # kept so that windows stay in step with cycles

    @property
    def latency_us(self) -> int:
        """From the expiry to the next sleep: at least the sample."""
        return round((self.end.ts - self.t0) * 1e6)

    @property
    def ran_us(self) -> int:
        """From the expiry to the switch-in (the wake-up, for a thread
        still current): at most the sample."""
        return round(((self.run or self.waking).ts - self.t0) * 1e6)


# A timer's `now` is its clock base's: monotonic (what cyclictest sleeps
# on, and the tick) lies near the trace clock; realtime is decades away.
SAME_CLOCK_S = 1000


def samples(events: list) -> list:
    """Every sample of cyclictest's RT threads as a Window (see there),
    in trace order; `free` marks those after the affinity marker.

    Each period a thread starts its sleep timer (hrtimer_start in its
    own context, expires = the absolute time cyclictest expects to
    wake).  The timer fires and wakes the thread.  Each CPU's trace
    clock is tied to the timers' monotonic clock by the first timer its
    interrupt runs (hrtimer_expire_entry's `now` is read once per
    interrupt, so later timers of the same interrupt are traced later
    than it).  The thread runs, reads the clock (in the vDSO: no event)
    and sleeps again: the sample ends at that next hrtimer_start, a few
    instructions after cyclictest's clock read.  Ending at the switch-in
    instead missed what delays a thread after it is switched in (a
    softirq run in its context at the next interrupt's exit).  A thread
    whose timer fires while it is still current is a sample of its own.
    """
    start = _marker(events)
    expires = {}        # hrtimer -> expiry (s, monotonic) it was set to
    sleeping = {}       # pid -> hrtimer of its current sleep
    firing = {}         # cpu -> the hrtimer_expire_entry running there
    offset = {}         # cpu -> its trace clock minus monotonic (s)
    first = {}          # cpu -> `now` of its interrupt's first timer
    pending = {}        # pid -> [expiry, fired, waking, run, late_us]
    current = {}        # cpu -> pid
    rt = set()          # pids of the real-time threads (not the main one)
    out = []
    for e in events:
        if e.name == "sched_switch":
            current[e.cpu] = _pid(e.args, "next_pid")
            w = pending.get(current[e.cpu])
            if w and w[3] is None:
                w[3] = e
        elif e.name == "hrtimer_start" and e.comm == "cyclictest" and \
                e.args.get("function", "").startswith(SLEEP_TIMER):
            w = pending.pop(e.pid, None)
            if w:
                # on the end CPU's clock (the timer's CPU's if it has none)
                t0 = w[0] + offset.get(e.cpu, offset[w[1].cpu])
                out.append(Window(e.pid, t0, w[1], w[2], end=e, run=w[3],
                                  free=t0 >= start, late_us=w[4]))
            elif e.pid in sleeping and e.pid in rt:    # its wake unseen
                out.append(Window(e.pid, e.ts, None, None, end=e,
                                  free=False, lost=True))
            expires[e.args.get("hrtimer")] = \
                int(e.args.get("expires", 0)) / 1e9
            sleeping[e.pid] = e.args.get("hrtimer")
        elif e.name == "hrtimer_expire_entry":
            firing[e.cpu] = e
            now = int(e.args.get("now", 0)) / 1e9
            if first.get(e.cpu) != now and abs(e.ts - now) < SAME_CLOCK_S:
                first[e.cpu] = now
                offset[e.cpu] = e.ts - now
        elif e.name == "local_timer_exit":
            firing.pop(e.cpu, None)         # its timers are done
        elif e.name == "sched_waking" and \
                e.args.get("comm") == "cyclictest" and \
                _pid(e.args, "prio") < RT_PRIO:
            pid, fired = _pid(e.args), firing.get(e.cpu)
            rt.add(pid)
            timer = sleeping.get(pid)
            if fired is None or timer is None or \
                    fired.args.get("hrtimer") != timer or \
                    fired.cpu not in offset:
                continue            # not woken by its own timer
            del sleeping[pid]
            expiry = expires.pop(timer)
            late = round((fired.ts - expiry - offset[fired.cpu]) * 1e6)
            pending[pid] = [expiry, fired, e, None, late]
    return out


class Index:
    """A parsed trace with what explaining many windows needs at hand."""

    def __init__(self, events: list, stall_us: float = STALL_US):
        self.events = events
        self.ts = [e.ts for e in events]
        self.cpus = timeline(events, stall_us)

    def between(self, t0: float, t1: float) -> list:
        return self.events[bisect.bisect_left(self.ts, t0):
                           bisect.bisect_right(self.ts, t1)]


def softirq_accounting(events: list, cpus: dict) -> dict:
    """Where softirq work ran over the trace: per vector, the share of
    one CPU it took inline (on interrupt exit or at local_bh_enable, on
    top of whatever task) and in ksoftirqd (hard interrupts inside it
    not counted); and how often the kernel handed work to ksoftirqd.

    A wake-up of ksoftirqd that follows a handler's exit on the same
    CPU, with nothing between, is processing that stopped with work
    left (__do_softirq's time and restart limits, need_resched, and the
    variants' own breaks and deferrals all wake ksoftirqd there); the
    vectors raised on that CPU and not yet run are the ones handed over.
    Any other wake-up is work raised where it could not run inline.
    """
    if not events:
        return {}
    t0, t1 = events[0].ts, events[-1].ts
    span = (t1 - t0) or 1.0
    share = {}
    for segs in cpus.values():
        for a, b, label in zip(segs.starts, segs.ends, segs.labels):
            if " softirq" not in label:
                continue
            where = "ksoftirqd" if " in ksoftirqd/" in label else "inline"
            cell = share.setdefault(label.split()[0],
                                    {"inline": 0.0, "ksoftirqd": 0.0})
            cell[where] += max(0.0, min(b, t1) - max(a, t0)) / span * 100
    wakeups, stopped, handed = 0, 0, Counter()
    pending, last = {}, {}
    running, lengths = {}, defaultdict(list)
    for e in events:
        if e.name == "softirq_raise":
            pending.setdefault(e.cpu, set()).add(e.args["vec"])
        elif e.name == "softirq_entry":
            pending.get(e.cpu, set()).discard(e.args["vec"])
            # per task: PREEMPT_RT may switch to another task's softirq
            # (the idle tasks, all pid 0, per CPU)
            running[_task_key(e.pid, e.cpu)] = (e.args["vec"], e.ts)
        elif e.name == "softirq_exit":
            vec, start = running.pop(_task_key(e.pid, e.cpu), (None, 0.0))
            if vec == e.args["vec"]:
                lengths[vec].append((e.ts - start) * 1e6)
        elif e.name == "sched_waking" and \
                e.args.get("comm", "").startswith("ksoftirqd/"):
            wakeups += 1
            if last.get(e.cpu) == "softirq_exit":
                stopped += 1
                handed.update(pending.get(e.cpu, ()))
        last[e.cpu] = e.name
    return {"seconds": round(t1 - t0, 3),
            "cpu_percent": {v: {k: round(x, 3) for k, x in c.items()}
                            for v, c in sorted(share.items())},
            "ksoftirqd_wakeups": wakeups,
            "stopped_early": stopped,
            "handed_over": dict(sorted(handed.items())),
            "net_rx_ends": net_rx_ends(events),
            "napi_polls": napi_polls(events),
            "handler_us": {v: handler_lengths(x)
                           for v, x in sorted(lengths.items())}}


def napi_polls(events: list) -> dict:
    """Where the NAPI polls ran: {"polls", "in_threads" (a napi/<dev>-*
    thread's, threaded NAPI), "cpus": {cpu: polls}}.  Under threaded
    NAPI the polls leave NET_RX, so where the scheduler put the threads
    is the question."""
    cpus, threads = Counter(), 0
    for e in events:
        if e.name == "napi_poll":
            cpus[e.cpu] += 1
            threads += e.comm.startswith("napi/")
    return {"polls": sum(cpus.values()), "in_threads": threads,
            "cpus": {str(c): n for c, n in sorted(cpus.items())}}


def net_rx_ends(events: list) -> dict:
    """Why each NET_RX run ended: {"runs", "drained", "packet_budget",
    "wakeup", "time"}.

    A run that raised NET_RX again itself (a raise on its CPU outside a
    hard interrupt, between its entry and exit) stopped with packets
    left: on its packet budget if its NAPI polls took NETDEV_BUDGET
    packets or more; else because a task woke on its CPU meanwhile
    ("wakeup": need_resched, which 6.1 and 6.12 mainline do not ask but
    zijlstra's patch 7 does, so on those kernels it may still be the
    time limit), or else on its time limit.  Any other run drained its
    queues.
    """
    ends = Counter()
    hard = Counter()
    running = {}        # cpu -> [packets, raised again, a wake-up]
    for e in events:
        edge = hard_edge(e.name)
        if edge == "entry":
            hard[e.cpu] += 1
        elif edge == "exit":
            hard[e.cpu] = max(0, hard[e.cpu] - 1)
        elif e.name == "softirq_entry" and e.args.get("vec") == "NET_RX":
            running[e.cpu] = [0, False, False]
        elif e.cpu in running:
            r = running[e.cpu]
            if e.name == "napi_poll":
                r[0] += e.args.get("work", 0)
            elif e.name == "softirq_raise" and not hard[e.cpu] and \
                    e.args.get("vec") == "NET_RX":
                r[1] = True
            elif e.name in ("sched_waking", "sched_wakeup") and \
                    _pid(e.args, "target_cpu") == e.cpu:
                r[2] = True
            elif e.name == "softirq_exit" and \
                    e.args.get("vec") == "NET_RX":
                packets, again, woke = running.pop(e.cpu)
                ends["runs"] += 1
                ends["drained" if not again else
                     "packet_budget" if packets >= NETDEV_BUDGET else
                     "wakeup" if woke else "time"] += 1
    return {k: ends[k] for k in ("runs", "drained", "packet_budget",
                                 "wakeup", "time")}


def handler_lengths(us: list) -> dict:
    """One vector's handler runs, entry to exit (hard irqs inside and, on
    PREEMPT_RT, preemption inside included): how long real softirqs get,
    beside the test module's fixed spin."""
    x = sorted(us)
    n = len(x)
    return {"runs": n, "p50": round(x[(n - 1) // 2], 1),
            "p99": round(x[min(n - 1, math.ceil(0.99 * n) - 1)], 1),
            "max": round(x[-1], 1),
            "over_1ms": sum(v > 1000 for v in x)}


def residency(windows: list) -> dict:
    """{cpu: percent of the samples}: where cyclictest's threads ran,
    the CPU of each sample's end (its next sleep, in its own context)."""
    count = Counter(w.end.cpu for w in windows)
    return {str(cpu): round(n / len(windows) * 100, 1)
            for cpu, n in sorted(count.items())}


def explain(index: Index, w: Window, path_us: int = 0) -> dict:
    """Why the sample `w` ran only at its end: the activity of each CPU
    involved between the expected wake-up and its end; `path_us`, the
    fixed path from cyclictest's clock read to the next sleep
    (agreement()), is taken out of the latency."""
    t0, t_run, cpu_run = w.t0, w.end.ts, w.end.cpu
    ran = w.run.ts if w.run else w.waking.ts
    inside = index.between(w.waking.ts, t_run)
    ups = [e for e in inside if e.name == "sched_wakeup"
           and _pid(e.args) == w.pid]
    moves = [e for e in inside if e.name == "sched_migrate_task"
             and _pid(e.args) == w.pid]
    target = int(ups[-1].args.get("target_cpu", cpu_run)) if ups \
        else cpu_run
    cpus = sorted({cpu_run, target, w.waking.cpu})
    where = {c: occupancy(index.cpus[c], t0, t_run, w.pid, ran)
             if c in index.cpus else {} for c in cpus}
    others = {k: v for k, v in where[cpu_run].items() if k != OWN}
    top = max(others.items(), key=lambda kv: kv[1]) if others \
        else ("unknown", 0.0)
    cause, kind = _cause(top, cpu_run), _kind(top[0])
    if _a_task(top[0]) and w.late_us > (w.latency_us - path_us) / 2:
        cause, kind = _late_timer(index, w)
    return {"latency_us": w.latency_us - path_us, "pid": w.pid,
            "comm": w.waking.args["comm"], "window": [t0, t_run],
            "timer_late_us": w.late_us,
            "waker_cpu": w.waking.cpu, "waker": w.waking.comm,
            "target_cpu": target, "ran_on": cpu_run,
            "migrated": [(_pid(e.args, "orig_cpu"), _pid(e.args, "dest_cpu"))
                         for e in moves],
            "cpus": {str(c): {k: round(v, 1) for k, v in sorted(
                where[c].items(), key=lambda kv: -kv[1])} for c in cpus},
            "cause": cause, "kind": kind,
            "emulator": top[0] in EMULATOR}


def _a_task(label: str) -> bool:
    return _kind(label).startswith("task ")


def _late_timer(index: Index, w: Window) -> tuple:
    """A task held the thread's CPU, but most of the wait came before
    the thread's timer interrupt: the wait is the late interrupt, not a
    task that ran instead of the woken thread.  Named with what ran on
    the timer's CPU from the expiry to the interrupt (interrupts off in
    the guest there, or a vCPU the emulator did not interrupt: the
    trace has no event that tells them apart), and whether that CPU
    logged any event meanwhile."""
    cpu = w.fired.cpu
    held = {k: v for k, v in occupancy(index.cpus[cpu], w.t0,
                                       w.fired.ts).items()
            if k != "hard irq"} if cpu in index.cpus else {}
    what = max(held.items(), key=lambda kv: kv[1])[0] if held \
        else "unknown"
    logged = any(e.cpu == cpu and e.name != "local_timer_entry"
                 for e in index.between(w.t0, w.fired.ts)
                 if e.ts < w.fired.ts)
    seen = "it logged events meanwhile" if logged \
        else "it logged no event meanwhile"
    under = f"task {what}" if _a_task(what) else what
    return (f"timer interrupt {w.late_us} us late on CPU{cpu}, under "
            f"{under}; {seen}",
            "timer late, " + _kind(what))


def _kind(label: str) -> str:
    """A cause without its numbers, to count windows by."""
    label = re.sub(r"ksoftirqd/\d+", "ksoftirqd", label)
    if "softirq" in label or label == "hard irq":
        return f"{label} on the task's CPU"
    if label in ("idle", "no activity", "unknown", STALLED):
        return label
    return f"task {label} on the task's CPU"


def _cause(top: tuple, cpu: int) -> str:
    label, us = top
    where = f"on CPU{cpu}, the task's CPU"
    if "softirq" in label:
        return f"{label} {where} ({us:.0f} us)"
    if label == "hard irq":
        return f"hard irqs {where} ({us:.0f} us)"
    if label == STALLED:
        return (f"CPU{cpu} stood still inside interrupts for {us:.0f} us: "
                f"the emulator ran the other vCPU, not a kernel delay")
    if label == "idle":
        return (f"CPU{cpu} idle for {us:.0f} us: the wake-up reached it "
                f"late (IPI or emulator did not run the vCPU)")
    if label == "no activity":
        return (f"no activity on CPU{cpu} for {us:.0f} us while the woken "
                f"task was current: the vCPU was not run (emulator) or "
                f"ran with interrupts off")
    return f"task {label} ran {where} ({us:.0f} us)"


def placement(x: dict) -> str:
    """Where the task was woken and where it ran, in a few words."""
    woke = f"woken on CPU{x['target_cpu']}"
    if x["waker_cpu"] is not None and x["waker_cpu"] != x["target_cpu"]:
        woke += f" (waker on CPU{x['waker_cpu']})"
    if x["migrated"]:
        return f"{woke}, moved, ran on CPU{x['ran_on']}"
    return f"{woke}, ran on CPU{x['ran_on']}"


def explain_run(run_dir: Path, over_us: int, cyclictest: dict = None,
                worst: int = 3, stall_us: float = STALL_US,
                cpus: int = 2, seconds: float = None,
                events: list = None) -> dict:
    """The run's trace: how many samples after the marker, the causes of
    all those over `over_us` counted, and the `worst` ones explained in
    full; with cyclictest's own samples of the traced run ({thread:
    [us, ...]}), whether the two agree (agreement()).  {"error": ...} if
    the trace cannot be read.  `seconds`: only the trace's first seconds
    after the marker, as a shorter trace phase would have recorded them
    (lab/analyse/tracelength.py); `events`: the trace already parsed."""
    dat = run_dir / "trace.dat"
    if not dat.is_file():
        return {"error": f"{dat} missing"}
    try:
        if events is None:
            events = parse(report_text(dat))
        if seconds is not None:
            events = _first_seconds(events, seconds)
        every = samples(events)
    except LabError as e:
        return {"error": str(e)}
    if seconds is not None and cyclictest is not None:
        cyclictest = _first_samples(every, cyclictest)
    found = [w for w in every if w.free]
    agreed = agreement(every, cyclictest, agree_us(cpus)) \
        if cyclictest is not None else {}
    path = agreed.get("path_us", 0)
    index = Index(events, stall_us)
    over = sorted((w for w in found if w.latency_us - path > over_us),
                  key=lambda w: -w.latency_us)
    explained = [explain(index, w, path) for w in over]
    causes = {}
    for x in explained:
        causes[x["kind"]] = causes.get(x["kind"], 0) + 1
    lat = sorted(w.latency_us - path for w in found)
    out = {"trace": str(dat), "wakeups": len(found), "over_us": over_us,
           "over": len(over),
           "causes": dict(sorted(causes.items(), key=lambda kv: -kv[1])),
           "max_us": lat[-1] if lat else 0, "p99_us": _p99(lat),
           "worst": [dict(x, trace=str(dat)) for x in explained[:worst]],
           "softirqs": dict(softirq_accounting(events, index.cpus),
                            cyclictest_cpu_percent=residency(found))}
    if agreed:
        out["agreement"] = agreed
    return out


def _marker(events: list) -> float:
    """When the guest marked cyclictest's threads free to move."""
    start = next((e.ts for e in events if e.name == "print"
                  and WIDENED in e.args.get("text", "")), None)
    if start is None:
        raise LabError("no 'lab: affinity widened' marker in the trace")
    return start


def _first_seconds(events: list, seconds: float) -> list:
    """The events up to `seconds` after the affinity marker."""
    end = _marker(events) + seconds
    return [e for e in events if e.ts <= end]


def _first_samples(windows: list, cyclictest: dict) -> dict:
    """Each thread's first samples, as many as the cut trace has windows
    for it (windows pair with samples in order, agreement()); a thread
    the cut trace has no window of is left out.  So agreement()'s count
    check cannot fail on a cut trace: only its brackets, p99 and max
    test it."""
    count = Counter(w.pid for w in windows)
    pids = sorted(count)
    return {t: xs[:count[pid]] for pid, (t, xs) in
            zip(pids, sorted(cyclictest.items()))}


def _p99(ordered: list) -> float:
    """Nearest-rank p99 of a sorted list (0 if empty)."""
    return ordered[max(1, -(-99 * len(ordered) // 100)) - 1] \
        if ordered else 0


AGREE_US = 20
AGREE_SHARE = 0.99


def agree_us(cpus: int) -> float:
    """AGREE_US for a guest of `cpus` vCPUs: one round-robin slice (the
    lab's QEMU runs a vCPU at most 20 us of instructions at a time) for
    each other vCPU.  With every other vCPU busy the clock a vCPU reads
    can be that far from the one its trace events were stamped with:
    null-hog-4cpu's traced run had 118 of 9644 samples outside +-20 us,
    1 outside +-60; null-hog-8cpu's 527 of 9392 outside +-60, none
    outside +-140 (reports/2026-12-05-guest-size-5boots/)."""
    return AGREE_US * max(1, cpus - 1)


def agreement(windows: list, cyclictest: dict,
              slack_us: float = AGREE_US) -> dict:
    """Does the trace see what cyclictest measured, sample for sample?

    The trace starts before cyclictest, so a thread's k-th window is its
    k-th cycle: threads pair by start order (pid), windows with samples
    by cycle.  Each thread's windows must number its samples within 2%.
    cyclictest reads its clock (in the vDSO: no trace event) after the
    thread is switched in and before it sleeps again, so each sample
    must lie in its window's bracket: from the expiry to the switch-in
    (or to the wake-up, for a thread still current), and from the expiry
    to the next sleep, each end widened by slack_us (AGREE_US, more in a
    bigger guest: agree_us()) for the emulated clock's jitter.  Work
    after the read (its -v line, an interrupt taken then) lengthens the
    window, not the sample: a window cannot say more than its bracket.  At least AGREE_SHARE of the samples
    after the marker must lie in their bracket, and cyclictest's p99
    and max within the brackets' (within 5% or slack_us).  The pairs'
    median difference to the sleep end (path_us) is what the
    explanations take off.  A run that fails is not explained: its
    causes are left out.
    """
    by_pid = {}
    for w in windows:
        by_pid.setdefault(w.pid, []).append(w)
    threads = sorted(cyclictest)
    if len(by_pid) != len(threads):
        return {"ok": False, "why": f"{len(by_pid)} traced threads, "
                f"{len(threads)} in cyclictest"}
    why, pairs = [], []
    for pid, thread in zip(sorted(by_pid), threads):
        ws, ss = by_pid[pid], cyclictest[thread]
        if abs(len(ws) - len(ss)) > 0.02 * len(ss):
            why.append(f"thread {thread}: {len(ws)} windows, {len(ss)} "
                       f"samples")
        pairs += [(w.ran_us, w.latency_us, s)
                  for w, s in zip(ws, ss) if w.free]
    if not pairs:
        return {"ok": False, "why": "no sample after the marker"}
    inside = sum(lo - slack_us <= s <= hi + slack_us for lo, hi, s in pairs)
    if inside < AGREE_SHARE * len(pairs):
        why.append(f"{len(pairs) - inside} of {len(pairs)} samples outside "
                   f"their window (switch-in to next sleep, +-"
                   f"{slack_us:g} us)")
    for name, pick in (("max", lambda xs: xs[-1]), ("p99", _p99)):
        lo, hi, s = (pick(sorted(p[k] for p in pairs)) for k in range(3))
        if not lo - max(0.05 * s, slack_us) <= s <= \
                hi + max(0.05 * s, slack_us):
            why.append(f"cyclictest {name} {s} us, trace {lo}-{hi} us")
    path = sorted(hi - s for _, hi, s in pairs)[len(pairs) // 2]
    return {"ok": not why, "why": "; ".join(why), "pairs": len(pairs),
            "inside": inside, "path_us": path}


def buffer_losses(path: Path) -> dict:
    """Overruns and dropped events per CPU from the ring buffer's stats
    (the guest saves per_cpu/cpuN/stats as trace-stats): {cpu: n}."""
    out, cpu = {}, None
    if not path.is_file():
        return out
    for line in path.read_text().splitlines():
        if line.startswith("# cpu"):
            cpu = line[2:]
            continue
        key, _, value = line.partition(":")
        if cpu and key.strip() in ("overrun", "dropped events") and \
                value.strip().isdigit():
            out[cpu] = out.get(cpu, 0) + int(value)
    return {c: n for c, n in out.items() if n}
