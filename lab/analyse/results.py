"""Read one run folder into a summary: what the guest measured.

Everything here reads files the guest wrote; nothing re-runs.  So a report
can be made wherever the results were copied.
"""
import json
import re
from pathlib import Path

from . import cyclictest, softirqrates, timerlat, trace
from ..base import metrics, stats, store
from ..run import runfolder, settings
from ..base.log import LabError

VECTORS = trace.VECTORS          # softirq vectors, /proc/softirqs order
TRACED = "cyclictest-traced.json"  # the trace phase's cyclictest


def softirqs(path: Path) -> dict:
    """/proc/softirqs: {vector: total over CPUs}."""
    out = {}
    for line in path.read_text().splitlines()[1:]:
        name, *counts = line.split()
        out[name.rstrip(":")] = sum(int(c) for c in counts)
    return out


def ksoftirqd_seconds(before: Path, after: Path) -> float:
    """CPU time of all ksoftirqd threads between the two readings (the
    guest saves nanoseconds from /proc/<pid>/schedstat)."""
    def read(p):
        return {a: int(b) for a, b in (line.split()
                for line in p.read_text().splitlines() if line.strip())}
    b, a = read(before), read(after)
    return sum(a[k] - b.get(k, 0) for k in a) / 1e9


def module_metrics(run_dir: Path, seconds: float = 0.0) -> dict:
    """The test module's counters over the measurement
    (module-stats-measured: one line of key=value), as cost metrics;
    with the measurement's guest seconds, also as rates."""
    path = run_dir / "module-stats-measured"
    if not path.is_file():
        return {}
    c = dict(f.split("=", 1) for f in path.read_text().split() if "=" in f)
    try:
        runs, triggers, missed, over_rt = (int(c[k]) for k in
                                           ("runs", "triggers", "missed",
                                            "inline_rt"))
        values = {"softirq_over_rt_percent":
                  100 * over_rt / runs if runs else 0.0,
                  "softirq_wait_max_us": int(c["delay_max_ns"]) / 1000,
                  "softirq_missed_percent": 100 * missed / (triggers + missed)
                  if triggers + missed else 0.0}
        if seconds:
            values |= {"softirq_over_rt_per_s": over_rt / seconds,
                       "softirq_runs_per_s": runs / seconds}
    except (KeyError, ValueError) as e:
        raise LabError(f"{path}: not the module's stats line ({e})") \
            from None
    return {name: {"value": v, "unit": metrics.get(name).unit}
            for name, v in values.items()}


def _counters(path: Path) -> dict:
    """A net-before/after file (guest/plans/scenario.sh net_counters):
    the time, rx_packets and rx_bytes per interface, UDP's counters by
    name, time_squeeze summed over CPUs, and the scratch disk's sectors
    read and written (absent without a disk)."""
    out = {"rx": {}, "rx_bytes": {}, "udp": {}, "squeeze": 0}
    udp_names = None
    for line in path.read_text().splitlines():
        w = line.split()
        if not w:
            continue
        if w[0] == "uptime":
            out["uptime"] = float(w[1])
        elif w[0] == "rx_packets":
            out["rx"][w[1]] = int(w[2])
        elif w[0] == "rx_bytes":
            out["rx_bytes"][w[1]] = int(w[2])
        elif w[0] == "Udp:" and udp_names is None:
            udp_names = w[1:]
        elif w[0] == "Udp:":
            out["udp"] = dict(zip(udp_names, (int(x) for x in w[1:])))
        elif w[0] == "softnet":
            out["squeeze"] += int(w[3], 16)
        elif w[0] == "disk":
            # /sys/block/<dev>/stat: sectors read 3rd, written 7th
            out["disk_sectors"] = (int(w[4]), int(w[8]))
    return out


def _readings(run_dir: Path):
    """The counters when the measurement started and ended, or None."""
    paths = [run_dir / f"net-{w}" for w in ("before", "after")]
    if not all(p.is_file() for p in paths):
        return None
    try:
        return tuple(_counters(p) for p in paths)
    except (ValueError, IndexError) as e:
        raise LabError(f"{run_dir}/net-before, net-after: not the plan's "
                       f"counters ({e!r})") from None


def measured_seconds(run_dir: Path) -> float:
    """Guest seconds from the first counter reading to the last: what the
    rates over the measurement divide by (0 if the run has no readings)."""
    r = _readings(run_dir)
    return r[1].get("uptime", 0.0) - r[0].get("uptime", 0.0) if r else 0.0


def nic_offered(run_dir: Path, record: dict) -> dict:
    """What the host's sender offered a NIC run ({} for another run):
    the rate asked (0: flood), the frames it handed to the host's kernel
    per host second, and per guest second of the whole run (boot, every
    phase), the x of an overload curve.  The sender paces in host time;
    under icount the guest's clock runs at its own speed, so the rate the
    guest sees is the second one, an average over the run."""
    try:
        sent = json.loads((run_dir / runfolder.NIC_SENT).read_text())
    except (OSError, ValueError):
        return {}
    guest_s = record.get("boot_to_init_s", 0.0) + \
        sum(record.get("phases_s", {}).values())
    return {"asked_pps": sent.get("rate", 0),
            "host_kpps": sent["sent"] / sent["seconds"] / 1000
            if sent.get("seconds") else float("nan"),
            "guest_kpps": sent["sent"] / guest_s / 1000 if guest_s
            else float("nan")}


def counter_metrics(run_dir: Path) -> dict:
    """The loads' metrics from the kernel's counters over the measurement
    (net-before and net-after): the NIC's for runs with a network device
    besides loopback, the loopback UDP flood's for runs that sent UDP, the
    scratch disk's for runs with a disk."""
    values = {}
    try:
        r = _readings(run_dir)
        if r is None:
            return {}
        b, a = r
        secs = a["uptime"] - b["uptime"]

        def udp(k):
            return a["udp"][k] - b["udp"][k]
        nics = [n for n in a["rx"] if n != "lo"]
        if nics:
            rx = sum(a["rx"][n] - b["rx"].get(n, 0) for n in nics)
            read, full = udp("InDatagrams"), udp("RcvbufErrors")
            values |= {"nic_rx_kpps": rx / secs / 1000,
                       "nic_app_kpps": read / secs / 1000,
                       "nic_rcvbuf_drop_percent":
                       100 * full / (read + full) if read + full else 0.0,
                       "net_rx_squeezes": a["squeeze"] - b["squeeze"]}
            if "NoPorts" in a["udp"]:       # (older plans kept 3 fields)
                unbound = udp("NoPorts")
                took = read + full + unbound
                values["nic_unbound_percent"] = \
                    100 * unbound / took if took else 0.0
        sent = udp("OutDatagrams")
        if sent and "lo" in a["rx_bytes"]:   # (older plans: no rx_bytes)
            lo = a["rx_bytes"]["lo"] - b["rx_bytes"]["lo"]
            values |= {"udp_rx_mbit_s": 8 * lo / secs / 1e6,
                       "udp_lost_percent":
                       100 * max(0, sent - udp("InDatagrams")) / sent}
        if "disk_sectors" in a:
            rd, wr = (512 * (x - y) / secs / 1e6 for x, y in
                      zip(a["disk_sectors"], b["disk_sectors"]))
            values |= {"block_read_mb_s": rd, "block_write_mb_s": wr}
    except (KeyError, ValueError, IndexError, ZeroDivisionError) as e:
        raise LabError(f"{run_dir}/net-before, net-after: not the plan's "
                       f"counters ({e!r})") from None
    return {name: {"value": v, "unit": metrics.get(name).unit}
            for name, v in values.items()}


def rate_metrics(rates: dict) -> dict:
    """The metrics of the run's softirq rates (scenarios that sample
    them): how long RCU went without a softirq where NET_RX ran."""
    if not rates:
        return {}
    return {"rcu_starved_s": {"value": softirqrates.starved(rates)["seconds"],
                              "unit": metrics.get("rcu_starved_s").unit}}


BANNER = re.compile(r"Linux version \S+ .* #\d+ (?:SMP )?(PREEMPT\w*)?")


def preemption(run_dir: Path) -> str:
    """The preemption model the booted kernel names in its banner
    (`uname -v`): PREEMPT_RT, PREEMPT, PREEMPT_DYNAMIC, or "" for
    voluntary or none; None when the console has no banner."""
    console = run_dir / "console.log"
    text = console.read_text(errors="replace") if console.is_file() else ""
    m = BANNER.search(text)
    return (m.group(1) or "") if m else None


def probe(run_dir: Path):
    path = run_dir / "probe.jsonl"
    if not path.is_file():
        return None
    lines = [json.loads(x) for x in path.read_text().splitlines() if x]
    summary = lines[-1] if lines and lines[-1].get("summary") else {}
    return {"summary": summary,
            "samples": [{k: x[k] for k in ("latency_us", "cpu", "prev_cpu",
                                           "waker_us") if k in x}
                        for x in lines if "latency_us" in x]}


def affinity(run_dir: Path, pin: str = "") -> dict:
    """cyclictest thread id -> Cpus_allowed_list; whether all could move
    (every thread allowed on more than one CPU), and whether that is what
    the scenario asked for (free, or pinned to CPU `pin`)."""
    rows = dict(line.split(None, 1) for line in
                (run_dir / "affinity.txt").read_text().splitlines()
                if line.strip())
    free = all(("-" in v or "," in v) for v in rows.values())
    pinned = all(v.strip() == str(pin) for v in rows.values())
    return {"threads": rows, "free_to_move": free,
            "as_asked": bool(rows) and (pinned if str(pin) else free)}


NAME = re.compile(r"[a-z0-9][a-z0-9.+_-]*\Z")


def _whole(x) -> bool:
    return type(x) is int and x >= 1


# What the analysis and the report compute with, field by field, as a
# run summary holds it (run.json's fields under the same names; the
# scenario's name from its `scenario`): a run whose record holds
# something else, edited by hand or written by another tool, is left out
# with the field named, where it once stopped the whole report with a
# TypeError far from the run ("boot": "two", "cpus": "2") or printed a
# guest of "0 vCPUs".
FIELDS = {
    # names as variants/ and common/scenarios/ allow them: a "/" or a
    # NUL in one once stopped the report at a file name made from it
    "variant": (lambda x: isinstance(x, str) and bool(NAME.match(x)),
                "a variant's name"),
    "scenario": (lambda x: isinstance(x, str) and bool(NAME.match(x)),
                 "a scenario's name"),
    "boot": (_whole, "a whole number of at least 1"),
    "status": (lambda x: isinstance(x, str), "text"),
    "reason": (lambda x: isinstance(x, str), "text"),
    "cpus": (_whole, "a whole number of at least 1"),
    "memory_mb": (_whole, "a whole number of at least 1"),
    "variant_conf": (lambda x: isinstance(x, dict), "an object"),
    "plan_env": (lambda x: isinstance(x, dict), "an object"),
    "kernel": (lambda x: isinstance(x, dict), "an object"),
    "qemu": (lambda x: isinstance(x, dict), "an object"),
    "made": (lambda x: isinstance(x, dict), "an object"),
    "looks": (lambda x: isinstance(x, list), "a list"),
    # what a finished run's summary adds, as a report stores it
    # (replicate and pool read those back)
    "boot_values": (lambda x: isinstance(x, dict), "an object"),
    "affinity": (lambda x: isinstance(x, dict), "an object"),
    "softirqs": (lambda x: isinstance(x, dict), "an object"),
    "metrics": (lambda x: isinstance(x, dict), "an object"),
    "ksoftirqd_cpu_percent": (lambda x: type(x) in (int, float),
                              "a number"),
}


def check_fields(summary: dict, where: str) -> dict:
    """`summary`, if each of its FIELDS is what the analysis computes
    with; else LabError naming `where` and the first field that is not."""
    for field, (ok, what) in FIELDS.items():
        if field in summary and not ok(summary[field]):
            shown = repr(summary[field])
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            raise LabError(f"{where}: {field} is {shown}, not {what}")
    return summary


def summarize(run_dir: Path) -> dict:
    record = store.read_json(run_dir / "run.json")
    out = {"run": str(run_dir), "variant": record["variant"],
           "scenario": record.get("scenario", {}).get("name"),
           "boot": record.get("boot"), "status": record["status"],
           "reason": record.get("reason", ""),
           "accel": record["qemu"]["accel"]["name"],
           "cpus": record.get("cpus", 2),
           "memory_mb": record.get("memory_mb", 1024),
           "seconds": record.get("seconds", 0),
           "plan_env": record.get("plan_env", {}),
           # how the run was made, for `python3 -m lab replicate`
           "made": {"lab_commit": record.get("lab_commit", ""),
                    "plan_sha256": record.get("plan_sha256", ""),
                    "scenario_text": record.get("scenario", {}).get(
                        "text", "")},
           "kernel": record["kernel"], "qemu": record["qemu"],
           "preemption": preemption(run_dir),
           "variant_conf": record.get("variant_conf", {}),
           "sweep_of": record.get("scenario", {}).get("sweep_of", ""),
           "looks": record.get("looks", [])}
    check_fields(out, "run.json")
    # failed runs too: a stalled kernel's rates show what stopped running
    rates = softirqrates.read(run_dir)
    if rates:
        out["softirq_rates"] = rates
    if record["status"] != "ok":
        return out
    ct = json.loads((run_dir / "cyclictest.json").read_text())
    # runs from before the plan read the time with its counters divide
    # by the measurement's nominal length
    seconds = measured_seconds(run_dir) or int(
        record.get("plan_env", {}).get("DURATION", 0)) or 1
    before, after = (softirqs(run_dir / f"softirqs-{w}")
                     for w in ("before", "after"))
    kept = latency(run_dir, "cyclictest", ct)
    out.update(
        histogram=stats.histogram(kept["latencies"]),
        boot_values=stats.boot_values(kept["latencies"], kept["threads"]),
        cyclictest_threads=kept["threads"],
        phase_seed=record.get("plan_env", {}).get("PHASE_SEED"),
        threads=ct.get("num_threads"),
        affinity=affinity(run_dir, record.get("plan_env", {}).get("PIN",
                                                                  "")),
        softirqs={v: after.get(v, 0) - before.get(v, 0) for v in VECTORS},
        measured_seconds=seconds,
        ksoftirqd_cpu_percent=100 * ksoftirqd_seconds(
            run_dir / "ksoftirqd-before", run_dir / "ksoftirqd-after")
        / seconds,
        metrics=module_metrics(run_dir, seconds) | counter_metrics(run_dir)
        | rate_metrics(rates),
        nic_offered=nic_offered(run_dir, record),
        probe=probe(run_dir))
    if (run_dir / TRACED).is_file():
        kept = traced_samples(run_dir)
        t = explain_traced(run_dir, record, kept)
        if "error" not in t:
            t["lost_events"] = trace.buffer_losses(run_dir / "trace-stats")
        out.update(traced_histogram=stats.histogram(kept["latencies"]),
                   trace=t)
    rtla = run_dir / "timerlat.txt"
    if rtla.is_file():
        out["timerlat"] = timerlat.parse(rtla.read_text(errors="replace"))
    return out


def traced_samples(run_dir: Path) -> dict:
    """The samples of the run's traced cyclictest (its trace phase)."""
    return latency(run_dir, "cyclictest-traced",
                   json.loads((run_dir / TRACED).read_text()))


def explain_traced(run_dir: Path, record: dict, kept: dict,
                   seconds: float = None, events: list = None) -> dict:
    """The run's trace explained at its scenario's threshold, against
    the traced cyclictest's samples `kept` (trace.explain_run)."""
    return trace.explain_run(
        run_dir, int(record.get("plan_env", {}).get("TRACE") or 0),
        kept["samples"], stall_us=stall_limit(record["qemu"]["accel"]),
        cpus=record.get("cpus", 2), seconds=seconds, events=events)


def stall_limit(accel: dict) -> float:
    """The hard-irq length over which the run's emulation, not the
    kernel, held the vCPU (lab/run/settings.py); runs recorded before
    run.json said: none in the lab's QEMU, settings.STALL_US in Debian's."""
    if "stall_us" in accel:
        return float("inf") if accel["stall_us"] is None \
            else accel["stall_us"]
    return float("inf") if accel.get("emulator") else settings.STALL_US


def latency(run_dir: Path, stem: str, ct: dict) -> dict:
    """The samples of one cyclictest run (lab/analyse/cyclictest.py)."""
    out_file = run_dir / f"{stem}.out"
    if not out_file.is_file():
        raise LabError(f"{out_file}: missing; cyclictest's samples (-v) "
                       f"are what the statistics read: run it again")
    return cyclictest.measured(out_file, run_dir / f"{stem}-start.txt", ct)
