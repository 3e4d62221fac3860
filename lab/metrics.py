"""Every metric the lab reports, declared once.

A metric has a name, a unit, which way is better, where a boot's value
comes from and what it means.  The guest plan, the run summaries
(lab/results.py), the per-boot statistics (lab/stats.py), the report
and LAVA's test cases all take them from here.  Adding one:

  - a latency metric: a line in LATENCY with how a boot's sorted
    cyclictest samples give its value;
  - a cost metric of a load generator: a line in COST naming its guest
    tool (guest/bin/), which prints `metric NAME VALUE UNIT` when it ends
    (the plan passes that line on to LAVA as a test case);
  - a counter of the test module over the measurement: a line in COST
    with source softirq_load, computed in results.module_metrics();
  - a network counter over the measurement: source nic, computed in
    results.nic_metrics() from the plan's net-before/after.

A `metric` line the declarations do not know is an error that names the
log and line; a test checks that tools and declarations agree.
"""
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .log import LabError


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    better: str                 # "lower" or "higher"
    source: str                 # "cyclictest", "ksoftirqd" or a guest tool
    meaning: str
    # a boot's value from its sorted latencies (cyclictest metrics)
    of_samples: Callable = None


def nearest_rank(sorted_values: np.ndarray, q: float) -> float:
    n = len(sorted_values)
    if not n:
        return float("nan")
    return float(sorted_values[max(1, math.ceil(q * n)) - 1])


def _share_over_1ms(s: np.ndarray) -> float:
    return float(np.mean(s > 1000)) if len(s) else float("nan")


# One value per boot from cyclictest's kept samples; "missed" from the
# periods its threads skipped.  Verdicts compare these.
LATENCY = [
    Metric("p50", "us", "lower", "cyclictest", "median wake-up latency",
           lambda s: nearest_rank(s, 0.5)),
    Metric("p99", "us", "lower", "cyclictest", "99th percentile",
           lambda s: nearest_rank(s, 0.99)),
    Metric("p99.9", "us", "lower", "cyclictest", "99.9th percentile",
           lambda s: nearest_rank(s, 0.999)),
    Metric("max", "us", "lower", "cyclictest", "worst sample",
           lambda s: nearest_rank(s, 1.0)),
    Metric("over_1ms", "share", "lower", "cyclictest",
           "share of samples over 1 ms", _share_over_1ms),
    Metric("missed", "share", "lower", "cyclictest",
           "periods cyclictest skipped, of those due"),
]

# What the load costs or achieves, one value per boot.
COST = [
    Metric("block_read_mb_s", "MB/s", "higher", "lab-blockread",
           "direct reads from the scratch disk"),
    Metric("udp_rx_mbit_s", "Mbit/s", "higher", "lab-udpflood",
           "UDP received over loopback"),
    Metric("udp_lost_percent", "%", "lower", "lab-udpflood",
           "UDP datagrams sent but not received"),
    Metric("fs_noise_rounds", "rounds", "higher", "lab-fsnoise",
           "write-sync-delete rounds of the filesystem noise"),
    # the NIC scenarios' kernel counters over the measurement (net-before/
    # after, lab/results.py); lab/nicload.py sends, guest/bin/lab-nicrx
    # receives
    Metric("nic_rx_kpps", "kpps", "higher", "nic",
           "frames the network drivers received, per guest second"),
    Metric("nic_app_kpps", "kpps", "higher", "nic",
           "UDP datagrams the applications read (UDP InDatagrams)"),
    Metric("nic_rcvbuf_drop_percent", "%", "lower", "nic",
           "UDP datagrams dropped at a full socket, of those that "
           "reached one (RcvbufErrors)"),
    Metric("net_rx_squeezes", "exits", "lower", "nic",
           "NET_RX runs cut by its packet budget or time limit "
           "(softnet_stat time_squeeze)"),
    # the test module's own counters over the measurement
    # (module-stats-measured, lab/results.py)
    Metric("softirq_over_rt_percent", "%", "lower", "softirq_load",
           "the module's handler runs that ran inline on top of an RT "
           "task"),
    Metric("softirq_wait_max_us", "us", "lower", "softirq_load",
           "the longest wait from a trigger to its chain's first run"),
    Metric("softirq_missed_percent", "%", "lower", "softirq_load",
           "triggers that found the last chain still running"),
    Metric("ksoftirqd_cpu_percent", "%", "lower", "ksoftirqd",
           "CPU time of all ksoftirqd threads over the measurement"),
]

BY_NAME = {m.name: m for m in LATENCY + COST}


def get(name: str) -> Metric:
    try:
        return BY_NAME[name]
    except KeyError:
        raise LabError(f"metric {name!r} is not declared in "
                       f"lab/metrics.py") from None


def from_tool(name: str, unit: str, where: str) -> Metric:
    """The declaration of a `metric NAME VALUE UNIT` line a guest tool
    printed at `where` (file:line): known name, same unit."""
    m = BY_NAME.get(name)
    if m is None or m.source in ("cyclictest", "ksoftirqd", "softirq_load",
                                 "nic"):
        raise LabError(f"{where}: metric {name!r} is not declared as a "
                       f"guest tool's in lab/metrics.py")
    if unit != m.unit:
        raise LabError(f"{where}: metric {name} in {unit!r}, declared in "
                       f"{m.unit!r} (lab/metrics.py)")
    return m
