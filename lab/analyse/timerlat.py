"""rtla timerlat's auto-analysis, read from the guest's timerlat.txt.

The guest runs `rtla timerlat top --aa-only <us>` (guest/plans/scenario.sh):
one timerlat thread per CPU, pinned, stopped at the first latency over
the threshold, which rtla then splits into IRQ latency and the
interference that delayed its thread (softirqs by vector, hard irqs,
other threads, the blocking thread).  This is a second opinion beside
lab/analyse/trace.py's, with a difference the report uses: rtla's threads
cannot move, cyclictest's can.
"""
import re

HIT = re.compile(r"## CPU (\d+) hit stop tracing")
PART = re.compile(r"^  (IRQ handler delay|IRQ latency|Timerlat IRQ duration|"
                  r"Blocking thread|IRQ interference|Softirq interference|"
                  r"Thread interference|Thread latency):?\s+([\d.]+) us")
# a contributor under a part: "BLOCK:4  4553.21 us", "swapper/0:0  347.74 us";
# rtla lists them in vector or pid order, not by size
SOURCE = re.compile(r"^\s+(\S+?):(\d+)\s+([\d.]+) us")
# the parts that delay the thread, and what each is called in the lab
INTERFERENCE = ("Softirq interference", "IRQ interference",
                "Thread interference", "Blocking thread")


def parse(text: str) -> dict:
    """{"hit": False, "error": ...} when nothing crossed the threshold or
    rtla failed; else the CPU, the thread latency, each part in us with
    its largest contributor, and the cause in the lab's words."""
    m = HIT.search(text)
    if not m:
        failed = [line for line in text.splitlines()
                  if line.startswith("rtla timerlat: exit")
                  or "error" in line.lower()]
        return {"hit": False, "error": failed[0] if failed else ""}
    parts, top, size, current = {}, {}, {}, None
    for line in text[m.end():].splitlines():
        p = PART.match(line)
        if p:
            current = p.group(1)
            parts[current] = float(p.group(2))
            continue
        s = SOURCE.match(line)
        if s and current in INTERFERENCE and \
                float(s.group(3)) > size.get(current, -1.0):
            top[current], size[current] = s.group(1), float(s.group(3))
        if line.startswith("Max timerlat IRQ latency"):
            break
    if "Thread latency" not in parts:
        # stopped on the timer interrupt itself (6.12's rtla with its
        # threads in user space): the late IRQ is the whole latency
        irq = parts.get("IRQ latency", 0.0)
        return {"hit": True, "cpu": int(m.group(1)), "latency_us": irq,
                "parts": parts, "sources": {}, "largest": "IRQ latency",
                "share": 1.0 if irq else 0.0, "cause": "IRQ latency"}
    latency = parts["Thread latency"]
    worst = max((p for p in INTERFERENCE if p in parts),
                key=lambda p: parts[p], default=None)
    return {"hit": True, "cpu": int(m.group(1)), "latency_us": latency,
            "parts": parts, "sources": top, "largest": worst,
            "share": parts[worst] / latency if worst and latency else 0.0,
            "cause": cause(worst, top.get(worst, "")) if worst else
            "IRQ latency"}


def cause(part: str, source: str) -> str:
    """rtla's largest part in the words of the lab's cause kinds."""
    if part == "Softirq interference":
        return f"{source} softirq"
    if part == "IRQ interference":
        return "hard irq"
    if source.startswith("ksoftirqd/"):
        return "softirq in ksoftirqd"
    if source.startswith("swapper/"):
        return "idle"
    return f"task {source}"


def agrees(rtla: dict, lab_kind: str) -> bool:
    """Does rtla's cause name what the lab's worst traced sample blames?
    ("BLOCK softirq" against "BLOCK softirq on the task's CPU", or "BLOCK
    softirq in ksoftirqd on the task's CPU".)"""
    if not rtla.get("hit"):
        return False
    if rtla["cause"] == "softirq in ksoftirqd":
        return "in ksoftirqd" in lab_kind
    return lab_kind.startswith(rtla["cause"])
