"""What a failed boot's console says first: the first stall or lockup
the kernel reported, the CPU and task it blames, and the softirq vector
running there (from the first handler in its backtrace, or its RIP
line where the CPU was stopped in the handler itself).

A watchdog's reason keeps only the first stall line and the last
console lines; the whole console is kept in the report's data/
(lab/report/publish.py), and this is what report.txt quotes of it.
"""
import re

# the kernel's reports of a CPU or task that stopped making progress
STALL_RE = re.compile(r"rcu: INFO: .*stall|watchdog: BUG: soft lockup|"
                      r"BUG: workqueue lockup|INFO: task .* blocked for|"
                      r"NMI watchdog: Watchdog detected hard LOCKUP")
STAMP_RE = re.compile(r"^\[\s*(\d+\.\d+)\]\s?")
CPU_RE = re.compile(r"\bCPU: (\d+) (?:UID: \d+ )?PID: \d+ Comm: (\S+)")
# rcu's "0-....:" line: the stalled CPU where another one reports it
RCU_CPU_RE = re.compile(r"rcu: \s*(\d+)-\S*: \(")
FRAME_RE = re.compile(r"^\s*(?:\? )?([A-Za-z0-9_.]+)\+0x")
# "RIP: 0010:net_rx_action+0x2f/0x230": where the CPU was, a frame the
# backtrace below it leaves out
RIP_RE = re.compile(r"\bRIP: [0-9a-f]+:([A-Za-z0-9_.]+)\+0x")
# each vector's handler, as a backtrace names it (kernel/softirq.c's
# open_softirq() calls, 6.1 and 6.12)
HANDLERS = {"tasklet_hi_action": "HI", "run_timer_softirq": "TIMER",
            "net_tx_action": "NET_TX", "net_rx_action": "NET_RX",
            "blk_done_softirq": "BLOCK", "irq_poll_softirq": "IRQ_POLL",
            "tasklet_action": "TASKLET", "run_rebalance_domains": "SCHED",
            "hrtimer_run_softirq": "HRTIMER", "rcu_core_si": "RCU",
            "rcu_core": "RCU"}
# how far past the stall line its report (registers, backtrace) reaches
REPORT_LINES = 80


def first_stall(console: str) -> dict:
    """{"line", "at_s", "cpu", "task", "vector", "handler"} of the first
    stall the console reports (None in a field it does not say), or None
    where it reports none."""
    lines = console.splitlines()
    for k, line in enumerate(lines):
        if not STALL_RE.search(line):
            continue
        stamp = STAMP_RE.match(line)
        out = {"line": STAMP_RE.sub("", line).strip(),
               "at_s": float(stamp.group(1)) if stamp else None,
               "cpu": None, "task": None, "vector": None, "handler": None}
        for after in lines[k + 1:k + 1 + REPORT_LINES]:
            text = STAMP_RE.sub("", after)
            if STALL_RE.search(text):
                break                       # the next report
            if out["cpu"] is None and (m := RCU_CPU_RE.search(text)):
                out["cpu"] = int(m.group(1))
            if out["task"] is None and (m := CPU_RE.search(text)):
                out["cpu"], out["task"] = int(m.group(1)), m.group(2)
            frame = FRAME_RE.match(text) or RIP_RE.search(text)
            if out["handler"] is None and frame and \
                    frame.group(1) in HANDLERS:
                out["handler"] = frame.group(1)
                out["vector"] = HANDLERS[frame.group(1)]
        return out
    return None


# what each report is, in a word, as STALL_RE's alternatives find them
KINDS = (("rcu: INFO", "RCU stall"), ("soft lockup", "soft lockup"),
         ("workqueue lockup", "workqueue lockup"),
         ("blocked for", "hung task"), ("hard LOCKUP", "hard lockup"))


def summary(stall: dict) -> str:
    """What and where, in a few words: "RCU stall, CPU 0 in NET_RX"."""
    kind = next((k for pattern, k in KINDS if pattern in stall["line"]),
                "stall")
    where = f"CPU {stall['cpu']}" if stall["cpu"] is not None else ""
    if stall["vector"]:
        where += f" in {stall['vector']}"
    return f"{kind}, {where.strip()}" if where.strip() else kind


def describe(stall: dict) -> str:
    """One line for report.txt: "first stall at 71.0 s, CPU 0
    (ksoftirqd/0), in NET_RX (net_rx_action): rcu: INFO: ..."."""
    where = [f"at {stall['at_s']:.1f} s" if stall["at_s"] is not None
             else ""]
    if stall["cpu"] is not None:
        where.append(f"CPU {stall['cpu']}" + (f" ({stall['task']})"
                                              if stall["task"] else ""))
    if stall["vector"]:
        where.append(f"in {stall['vector']} ({stall['handler']})")
    return f"first stall {', '.join(w for w in where if w)}: " \
        f"{stall['line']}"
