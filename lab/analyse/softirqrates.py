"""Each CPU's softirq rates through a run (guest/plans/scenario.sh's
softirq-rates: `mpstat -I SCPU N`, after a line with the uptime at its
start), and what they show: a vector that stopped running on a CPU
while another kept it busy.

mpstat (Debian's sysstat) does the sampling: it reads /proc/softirqs
itself every N seconds and prints each CPU's rate of every vector, so
the guest forks nothing per sample.
"""
from pathlib import Path

from ..base.log import LabError

FILE = "softirq-rates"


def parse(text: str, where: str = FILE) -> dict:
    """{"start_s": uptime at the first sample's start, "interval_s",
    "vectors": [...], "cpus": {"0": {vector: [per-second rates]}}}
    (CPU numbers as text, as the JSON of a stored summary keeps them).
    mpstat's 'Average:' lines are left out: the samples are the record."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("uptime "):
        raise LabError(f"{where}: first line is not 'uptime SECONDS'")
    start = float(lines[0].split()[1])
    vectors, cpus, stamps = None, {}, []
    for line in lines[1:]:
        words = line.split()
        if len(words) < 3 or words[0] == "Average:":
            continue
        if words[1] == "CPU":
            vectors = [w[:-2] for w in words[2:] if w.endswith("/s")]
            continue
        if vectors is None or not words[1].isdigit() or \
                len(words) != 2 + len(vectors):
            continue
        try:
            rates = [float(w) for w in words[2:]]
        except ValueError:
            raise LabError(f"{where}: not a line of rates: {line!r}") \
                from None
        if words[1] == "0":
            stamps.append(words[0])
        per = cpus.setdefault(words[1], {v: [] for v in vectors})
        for v, r in zip(vectors, rates):
            per[v].append(r)
    if vectors is None:
        raise LabError(f"{where}: no mpstat -I SCPU header")
    return {"start_s": start, "interval_s": _interval(stamps),
            "vectors": vectors, "cpus": cpus}


def _interval(stamps: list) -> float:
    """Seconds between samples, from mpstat's HH:MM:SS stamps (1 if they
    cannot tell)."""
    def secs(s):
        h, m, x = (int(p) for p in s.split(":"))
        return h * 3600 + m * 60 + x
    try:
        steps = [(secs(b) - secs(a)) % 86400
                 for a, b in zip(stamps, stamps[1:])]
    except ValueError:
        return 1.0
    steps = sorted(x for x in steps if x > 0)
    return float(steps[len(steps) // 2]) if steps else 1.0


def read(run_dir: Path) -> dict:
    """The run's rates, or None if it sampled none."""
    path = run_dir / FILE
    if not path.is_file():
        return None
    return parse(path.read_text(errors="replace"), str(path))


def starved(rates: dict, vector: str = "RCU", by: str = "NET_RX") -> dict:
    """The longest stretch in which `vector` did not run on a CPU while
    `by` ran there: {"vector", "by", "cpu", "seconds", "from_s", "to_s"}
    (guest uptime), seconds 0 where it never happened.  A CPU's stretch
    is consecutive samples with no `vector` and some `by`."""
    best = {"vector": vector, "by": by, "cpu": None, "seconds": 0.0,
            "from_s": None, "to_s": None}
    step = rates["interval_s"]
    for cpu, per in sorted(rates["cpus"].items(), key=lambda kv: int(kv[0])):
        run = 0
        for k, (q, b) in enumerate(zip(per.get(vector, []),
                                       per.get(by, []))):
            run = run + 1 if q == 0 and b > 0 else 0
            if run * step > best["seconds"]:
                end = rates["start_s"] + (k + 1) * step
                best |= {"cpu": cpu, "seconds": run * step,
                         "from_s": round(end - run * step, 1),
                         "to_s": round(end, 1)}
    return best


def describe(s: dict) -> str:
    """One line for a report from starved()'s answer."""
    if not s["seconds"]:
        return (f"{s['vector']} softirqs ran in every sample on every CPU "
                f"where {s['by']} ran")
    return (f"no {s['vector']} softirq on CPU{s['cpu']} for "
            f"{s['seconds']:g} s ({s['from_s']:g}-{s['to_s']:g} s after "
            f"boot) while {s['by']} ran there")
