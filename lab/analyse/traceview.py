"""Views of an explained worst case: a timeline picture for report.md and
a JSON trace-event file that the Perfetto UI (ui.perfetto.dev) opens.

Both show the latency window and a few milliseconds before it, one row
per guest CPU: which task ran, and on top the softirq vectors and hard
irqs that interrupted it.
"""
import json
from pathlib import Path

from .trace import VECTORS, hard_edge, is_idle

BEFORE_S = 0.010           # context shown before the expected wake-up
AFTER_S = 0.002


def _slices(events: list, cpu: int, t0: float, t1: float):
    """(kind, label, start, end) on one CPU: kind is "task", "softirq" or
    "irq"; open slices are cut at the window's edges."""
    out = []
    task, task_since = None, t0
    soft = hard = None
    for e in events:
        if e.cpu != cpu or e.ts < t0:
            continue
        if e.ts > t1:
            break
        if task is None:
            task = e.comm if e.name != "sched_switch" \
                else e.args.get("prev_comm", e.comm)
        if e.name == "sched_switch":
            out.append(("task", task, task_since, e.ts))
            task, task_since = e.args.get("next_comm", "?"), e.ts
        elif e.name == "softirq_entry":
            soft = (e.args["vec"], e.ts)
        elif e.name == "softirq_exit":
            out.append(("softirq", e.args["vec"], soft[1] if soft else t0,
                        e.ts))
            soft = None
        elif hard_edge(e.name) == "entry":
            # device handlers carry a name; timer and IPI vectors do not
            hard = (e.args.get("name", e.name[:-len("_entry")]), e.ts)
        elif hard_edge(e.name) == "exit":
            out.append(("irq", hard[0] if hard else "irq",
                        hard[1] if hard else t0, e.ts))
            hard = None
    if task is not None:
        out.append(("task", task, task_since, t1))
    if soft:
        out.append(("softirq", soft[0], soft[1], t1))
    if hard:
        out.append(("irq", hard[0], hard[1], t1))
    return out


def _span(x: dict):
    t0, t_run = x["window"]
    return t0 - BEFORE_S, t_run + AFTER_S


def _cpus(events: list) -> list:
    return sorted({e.cpu for e in events})


def perfetto(events: list, x: dict, path: Path) -> None:
    """Chrome JSON trace-event format: one thread per guest CPU."""
    a, b = _span(x)
    trace = [{"ph": "M", "pid": 1, "name": "process_name",
              "args": {"name": "guest CPUs"}}]
    for cpu in _cpus(events):
        trace.append({"ph": "M", "pid": 1, "tid": cpu, "name":
                      "thread_name", "args": {"name": f"CPU{cpu}"}})
        for kind, label, s, e in _slices(events, cpu, a, b):
            name = label if kind == "task" else f"{label} {kind}"
            trace.append({"ph": "X", "pid": 1, "tid": cpu, "name": name,
                          "cat": kind, "ts": s * 1e6,
                          "dur": max(e - s, 0) * 1e6})
    for e in events:
        if a <= e.ts <= b and (e.name.startswith("sched_wak") or
                               e.name == "sched_migrate_task" or
                               e.name == "print"):
            trace.append({"ph": "i", "s": "t", "pid": 1, "tid": e.cpu,
                          "name": e.name, "ts": e.ts * 1e6,
                          "args": {k: str(v) for k, v in e.args.items()}})
    path.write_text(json.dumps({"traceEvents": trace,
                                "displayTimeUnit": "ms"}))


COLOURS = dict(zip(VECTORS, ["#8c564b", "#7f7f7f", "#bcbd22", "#1f77b4",
                             "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
                             "#e377c2", "#393b79"]))


def draw(ax, events: list, x: dict, title: str) -> None:
    """One worst case on a matplotlib axis, time in ms from the expected
    wake-up."""
    a, b = _span(x)
    t0, t_run = x["window"]
    cpus = _cpus(events)
    for row, cpu in enumerate(cpus):
        for kind, label, s, e in _slices(events, cpu, a, b):
            left, width = (s - t0) * 1e3, (e - s) * 1e3
            if kind == "task":
                if is_idle(label):
                    continue
                colour = "#d62728" if label == x["comm"] else \
                    "#ffbb78" if label.startswith("ksoftirqd") else "#c7c7c7"
                ax.broken_barh([(left, width)], (row - 0.3, 0.35),
                               color=colour)
            else:
                colour = COLOURS.get(label, "black") if kind == "softirq" \
                    else "black"
                ax.broken_barh([(left, width)], (row + 0.1, 0.25),
                               color=colour)
    ax.axvspan(0, (t_run - t0) * 1e3, color="#fff3b0", zorder=0)
    ax.axvline((t_run - t0) * 1e3, color="#d62728", lw=1)
    ax.set_yticks(range(len(cpus)))
    ax.set_yticklabels([f"CPU{c}" for c in cpus])
    ax.set_xlim((a - t0) * 1e3, (b - t0) * 1e3)
    ax.set_ylim(-0.5, len(cpus) - 0.4)
    ax.set_title(title, fontsize=9, loc="left")


def legend_handles():
    from matplotlib.patches import Patch
    return ([Patch(color="#d62728", label="RT task"),
             Patch(color="#ffbb78", label="ksoftirqd"),
             Patch(color="#c7c7c7", label="other task"),
             Patch(color="#fff3b0", label="latency window"),
             Patch(color="black", label="hard irq")] +
            [Patch(color=COLOURS[v], label=v) for v in
             ("NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "TIMER", "RCU",
              "SCHED", "HI")])
