"""What the CPU did between an RT task's wake-up and its run, from a trace.

The guest's trace phase (guest/plans/scenario.sh) runs cyclictest again
with scheduler and irq events traced into a ring buffer that holds the
whole run, saved with `trace-cmd extract` (trace.dat, opened by
KernelShark).  Here the host turns it into events with `trace-cmd
report`, measures every wake-up of cyclictest's RT threads (sched_waking
to the sched_switch that runs it), and splits the worst ones' windows, on
the CPU the task ran on and on the CPU it was woken on, into softirq
vectors (inline or in ksoftirqd), hard irqs, other tasks and idle.  The
largest share on the task's CPU is the cause.

Why the whole run and not cyclictest's break trace (-b): a break ends
cyclictest at the first sample over the threshold, and while the guest
is still widening the threads' affinity the first samples are pinned
ones; a full trace explains the worst wake-ups of a whole fair run.
"""
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .log import LabError

# Softirq vectors in kernel (and /proc/softirqs) order.
VECTORS = ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL",
           "TASKLET", "SCHED", "HRTIMER", "RCU"]
LINE = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]"
                  r"(?:\s+\S+)?\s+(?P<ts>\d+\.\d+):\s+(?P<name>\w+):"
                  r"\s*(?P<rest>.*)$")
# The guest plan's marker once cyclictest's threads may run on any CPU;
# wake-ups before it are left out (the task was still pinned).
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
# No real interrupt handler in these guests runs this long: a hard irq
# that does is a vCPU the emulator did not run (README.md, "Fidelity").
STALL_US = 500
STALLED = "vCPU stalled in an interrupt"
# Shares that mean the emulator did not run the vCPU (see _cause); "no
# activity" may also be a kernel running with interrupts off.
EMULATOR = (STALLED,)
WAKEUP = re.compile(r"(?P<comm>.+?):(?P<pid>\d+) \[-?\d+\]"
                    r"(?: success=\d+)? CPU:(?P<target_cpu>\d+)")


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


def occupancy(events: list, cpu: int, t0: float, t1: float,
              woken: int = -1) -> dict:
    """Microseconds of [t0, t1] on `cpu` per activity: "BLOCK softirq",
    "BLOCK softirq in ksoftirqd/0", "hard irq", a task's comm, "idle";
    time in which the woken task (pid `woken`) was current but showed
    nothing is "no activity"."""
    shares = {}
    task = None                 # comm current on the CPU
    pid = -1                    # and its pid
    soft = None                 # vector while a softirq runs
    hard = 0                    # hard irq nesting depth
    since = t0

    def add(label, a, b):
        a, b = max(a, t0), min(b, t1)
        if b > a:
            shares[label] = shares.get(label, 0.0) + (b - a) * 1e6

    def current():
        if hard:
            return "hard irq"
        if soft is not None:
            if task and task.startswith("ksoftirqd/"):
                return f"{soft} softirq in {task}"
            return f"{soft} softirq"
        if task is None:
            return "unknown"
        if pid == woken:
            return "no activity"
        return "idle" if is_idle(task) else task

    for e in events:
        if e.cpu != cpu:
            continue
        if e.ts > t1:
            break
        if task is None:
            task, pid = (e.comm, e.pid) if e.name != "sched_switch" \
                else (e.args.get("prev_comm", e.comm),
                      _pid(e.args, "prev_pid"))
        label, edge = current(), hard_edge(e.name)
        if e.name in ("softirq_entry", "softirq_exit") or edge or \
                e.name == "sched_switch":
            if label == "hard irq" and (e.ts - since) * 1e6 > STALL_US:
                label = STALLED
            add(label, since, e.ts)
            since = e.ts
        if e.name == "softirq_entry":
            soft = e.args["vec"]
        elif e.name == "softirq_exit":
            soft = None
        elif edge == "entry":
            hard += 1
        elif edge == "exit":
            hard = max(0, hard - 1)
        elif e.name == "sched_switch":
            task, pid = e.args.get("next_comm", "?"), \
                _pid(e.args, "next_pid")
    add(current(), since, t1)
    return shares


def wakeups(events: list) -> list:
    """(waking event, switch-in event, latency us) of every wake-up of a
    real-time cyclictest thread after the affinity marker.

    A thread woken while it is still current (its timer fired before it
    had switched out) gets sched_waking and no switch-in: it runs on at
    once, so that wake-up opens no window; otherwise it would stay
    pending and merge with the next period's wake-up.
    """
    start = next((e.ts for e in events if e.name == "print"
                  and WIDENED in e.args.get("text", "")), None)
    if start is None:
        raise LabError("no 'lab: affinity widened' marker in the trace")
    pending, out, current = {}, [], {}
    for e in events:
        if e.name == "sched_switch":
            current[e.cpu] = _pid(e.args, "next_pid")
        if e.ts < start:
            continue
        if e.name == "sched_waking" and e.args.get("comm") == "cyclictest" \
                and _pid(e.args, "prio") < RT_PRIO:
            pid = _pid(e.args)
            if pid not in current.values():
                pending.setdefault(pid, e)
        elif e.name == "sched_switch":
            w = pending.pop(_pid(e.args, "next_pid"), None)
            if w:
                out.append((w, e, round((e.ts - w.ts) * 1e6)))
    return out


def explain(events: list, waking: Event, run: Event) -> dict:
    """Why the wake-up `waking` ran only at `run`."""
    pid, t0, t_run, cpu_run = _pid(waking.args), waking.ts, run.ts, run.cpu
    ups = [e for e in events if e.name == "sched_wakeup"
           and _pid(e.args) == pid and t0 <= e.ts <= t_run]
    moves = [e for e in events if e.name == "sched_migrate_task"
             and _pid(e.args) == pid and t0 <= e.ts <= t_run]
    target = int(ups[-1].args.get("target_cpu", cpu_run)) if ups \
        else cpu_run
    cpus = sorted({cpu_run, target, waking.cpu})
    where = {c: occupancy(events, c, t0, t_run, pid) for c in cpus}
    shares = where[cpu_run]
    top = max(shares.items(), key=lambda kv: kv[1]) if shares \
        else ("unknown", 0.0)
    return {"latency_us": round((t_run - t0) * 1e6), "pid": pid,
            "comm": waking.args["comm"], "window": [t0, t_run],
            "waker_cpu": waking.cpu, "waker": waking.comm,
            "target_cpu": target, "ran_on": cpu_run,
            "migrated": [(_pid(e.args, "orig_cpu"), _pid(e.args, "dest_cpu"))
                         for e in moves],
            "cpus": {str(c): {k: round(v, 1) for k, v in sorted(
                where[c].items(), key=lambda kv: -kv[1])} for c in cpus},
            "cause": _cause(top, cpu_run),
            "emulator": top[0] in EMULATOR}


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


def explain_run(run_dir: Path, over_us: int, worst: int = 3) -> dict:
    """The run's trace: how many wake-ups, how many over `over_us`, and
    the `worst` ones explained; {"error": ...} if it cannot be read."""
    dat = run_dir / "trace.dat"
    if not dat.is_file():
        return {"error": f"{dat} missing"}
    try:
        events = parse(report_text(dat))
        found = wakeups(events)
    except LabError as e:
        return {"error": str(e)}
    top = sorted(found, key=lambda w: -w[2])[:worst]
    lat = sorted(w[2] for w in found)
    return {"trace": str(dat), "wakeups": len(found), "over_us": over_us,
            "over": sum(w[2] > over_us for w in found),
            "max_us": lat[-1] if lat else 0,
            "p99_us": lat[max(1, -(-99 * len(lat) // 100)) - 1] if lat
            else 0,
            "worst": [dict(explain(events, w, r), trace=str(dat))
                      for w, r, _ in top]}


AGREE_US = 50


def agreement(t: dict, samples: int, p99_us: float, max_us: float) -> dict:
    """Does the trace see what cyclictest measured in the same run?

    The windows must number cyclictest's samples after the same marker
    within 2%, and their max and p99 must match cyclictest's within 5%
    or AGREE_US.  Today a window runs from sched_waking to the
    switch-in: a sample whose thread never slept (its timer expired
    before it had switched out, or while a stalled vCPU held it) has no
    window, and a window misses the timer interrupt's own delay and the
    return to user space (AGREE_US covers those: 45 us measured on
    stultz-v5's long-block, p99 278 against 323 us).  A run that fails
    is not explained: its causes are left out.
    """
    why = []
    if abs(t["wakeups"] - samples) > 0.02 * samples:
        why.append(f"{t['wakeups']} windows, {samples} samples")
    if abs(t["max_us"] - max_us) > max(0.05 * max_us, AGREE_US):
        why.append(f"trace max {t['max_us']} us, cyclictest "
                   f"{max_us:.0f} us")
    if abs(t["p99_us"] - p99_us) > max(0.05 * p99_us, AGREE_US):
        why.append(f"trace p99 {t['p99_us']} us, cyclictest "
                   f"{p99_us:.0f} us")
    return {"ok": not why, "why": "; ".join(why)}


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
