"""Every metric the lab reports, declared once.

A metric has a name, a unit, which way is better, where a boot's value
comes from and what it means.  The run summaries (lab/analyse/results.py), the
per-boot statistics (lab/base/stats.py) and the report take them from here.
Adding one:

  - a latency metric: a line in LATENCY with how a boot's sorted
    cyclictest samples give its value;
  - a counter of the test module over the measurement: a line in COST
    with source softirq_load, computed in results.module_metrics();
  - a kernel counter over the measurement (network, UDP, scratch disk):
    a line in COST with its source, computed in results.counter_metrics()
    from the plan's net-before/after.

The load generators (guest/bin/) only make load: they run until the plan
stops them, and their work is read from the kernel's counters over
cyclictest's own run, so every cost covers the same window as the
latencies it is weighed against.
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
    # or from the boot's other values ({name: value}): a metric derived
    # from one every stored run has, so published runs get it too
    of_boot: Callable = None
    # the smallest difference that counts as an effect, in the unit: a
    # shift below it gets no verdict whatever p says (default: the
    # unit's, FLOORS)
    floor: float = None
    # a count of rare events: the smallest median, in the unit, at which
    # it is judged; where both cells' medians are under it too few
    # events happened for a verdict (lab/docs/statistics.md)
    min_level: float = 0.0

    @property
    def min_effect(self) -> float:
        return FLOORS[self.unit] if self.floor is None else self.floor

    @property
    def binary(self) -> bool:
        """A count of boots (0 or 1 a boot), compared as two shares."""
        return self.unit == "boots"


# The smallest effect worth a verdict, per unit.  Latencies: 5 us, under
# the lab's idle p99 spread between boots (34-61 us) and above the 1 us
# resolution; shares of samples: 0.1 percentage point; rates: about the
# rounding of the counters over a 10 s measurement; stretches timed by
# per-second samples: two samples.
FLOORS = {"us": 5.0, "share": 0.001, "%": 0.5, "MB/s": 0.5,
          "Mbit/s": 5.0, "kpps": 0.5, "exits": 1.0, "runs/s": 0.5,
          "boots": 0.1, "s": 2.0}


def nearest_rank(sorted_values: np.ndarray, q: float) -> float:
    n = len(sorted_values)
    if not n:
        return float("nan")
    return float(sorted_values[max(1, math.ceil(q * n)) - 1])


# A quantile is given only where at least this many samples of the boot
# lie beyond it: p99.9 from 5,000 samples, p99.99 from 50,000 (a 60 s
# run of two threads at 1 and 1.5 ms has 100,000); with fewer it is the
# boot's max under another name.
MIN_BEYOND = 5


def tail_quantile(sorted_values: np.ndarray, q: float) -> float:
    """nearest_rank, or NaN where the boot has too few samples for it."""
    n = len(sorted_values)
    if n - max(1, math.ceil(q * n)) < MIN_BEYOND:
        return float("nan")
    return nearest_rank(sorted_values, q)


def _over(value: float, limit: float) -> float:
    """1 where a boot's value is over the limit, 0 where not, NaN where
    the boot has none."""
    return float(value > limit) if value == value else float("nan")


def _share_over_1ms(s: np.ndarray) -> float:
    return float(np.mean(s > 1000)) if len(s) else float("nan")


# One value per boot from cyclictest's kept samples; "missed" from the
# periods its threads skipped.  Verdicts compare these.
LATENCY = [
    Metric("p50", "us", "lower", "cyclictest", "median wake-up latency",
           lambda s: nearest_rank(s, 0.5)),
    Metric("p99", "us", "lower", "cyclictest", "99th percentile",
           lambda s: nearest_rank(s, 0.99)),
    Metric("p99.9", "us", "lower", "cyclictest", "99.9th percentile "
           "(boots of 5,000 samples or more)",
           lambda s: tail_quantile(s, 0.999)),
    Metric("p99.99", "us", "lower", "cyclictest", "99.99th percentile "
           "(boots of 50,000 samples or more)",
           lambda s: tail_quantile(s, 0.9999)),
    Metric("max", "us", "lower", "cyclictest", "worst sample",
           lambda s: nearest_rank(s, 1.0)),
    Metric("over_1ms", "share", "lower", "cyclictest",
           "share of samples over 1 ms", _share_over_1ms),
    # A tail with two modes (a boot's p99 near 70 us or near 1 ms, as
    # 6.1's and 6.12's under filesystem noise): whether a boot is in the
    # high mode, so that a kernel that removes the mode is seen; a cell's
    # value is the share of its boots.  200 us: over the boots of the
    # kernels that remove the high mode (65-132 us); a few boots of the
    # others fall between the modes (lab/docs/statistics.md).
    Metric("p99_over_200us", "boots", "lower", "cyclictest",
           "boots whose p99 is over 200 us (the tail's high mode)",
           of_boot=lambda b: _over(b["p99"], 200)),
    Metric("missed", "share", "lower", "cyclictest",
           "periods cyclictest skipped, of those due"),
]

# What the load costs or achieves, one value per boot.
COST = [
    # the kernel's counters over the measurement (net-before/after,
    # lab/analyse/results.py counter_metrics): the scratch disk's (lab-blockread,
    # lab-fsnoise), loopback UDP's (lab-udpflood), and the NIC's
    # (lab/run/nicload.py sends, guest/bin/lab-nicrx receives)
    Metric("block_read_mb_s", "MB/s", "higher", "disk",
           "MB read from the scratch disk, per guest second"),
    Metric("block_write_mb_s", "MB/s", "higher", "disk",
           "MB written to the scratch disk, per guest second"),
    Metric("udp_rx_mbit_s", "Mbit/s", "higher", "loopback",
           "UDP flood received over loopback (its rx_bytes)"),
    # floor: baseline's own loss ranged 2.8-10.5% over the 10 boots of
    # two runs of net-noise at one plan (default-5boots-a and -b)
    Metric("udp_lost_percent", "%", "lower", "loopback",
           "UDP datagrams sent but not received", floor=5.0),
    Metric("nic_rx_kpps", "kpps", "higher", "nic",
           "frames the network drivers received, per guest second"),
    Metric("nic_app_kpps", "kpps", "higher", "nic",
           "UDP datagrams the applications read (UDP InDatagrams)"),
    Metric("nic_rcvbuf_drop_percent", "%", "lower", "nic",
           "UDP datagrams dropped at a full socket, of those that "
           "reached one (RcvbufErrors)"),
    # the receiver not yet listening, or starved before it bound its
    # socket: a rcvbuf drop share of 0% then means nothing reached it
    Metric("nic_unbound_percent", "%", "lower", "nic",
           "UDP datagrams that found no socket (NoPorts), of those UDP "
           "took in: the receiver not yet bound"),
    Metric("net_rx_squeezes", "exits", "lower", "nic",
           "NET_RX runs cut by its packet budget or time limit "
           "(softnet_stat time_squeeze)"),
    # the test module's own counters over the measurement
    # (module-stats-measured, lab/analyse/results.py)
    # floors of the module's counts: a shift of 3 of its events or fewer
    # in a 10 s measurement (about 515 triggers: 3 are 0.58%, 0.29-0.30
    # runs/s) is no effect; two runs of the default matrix at one plan
    # disagreed on shifts of 2-5 events under the units' own floors.
    # Levels: no verdict where both medians are under 10 events (1.9%,
    # 1 run/s): runs E and F disagreed on 7 such counts, 0 against 1-15
    # events a boot, decided by one boot or a gate (lab/docs/statistics.md)
    Metric("softirq_over_rt_percent", "%", "lower", "softirq_load",
           "the module's handler runs that ran inline on top of an RT "
           "task", floor=0.7, min_level=1.9),
    Metric("softirq_over_rt_per_s", "runs/s", "lower", "softirq_load",
           "the module's handler runs on top of an RT task, per guest "
           "second: the RT task's loss, in handler lengths", floor=0.35,
           min_level=1.0),
    Metric("softirq_runs_per_s", "runs/s", "higher", "softirq_load",
           "the module's handler runs, per guest second: the softirq "
           "work done"),
    Metric("softirq_wait_max_us", "us", "lower", "softirq_load",
           "the longest wait from a trigger to its chain's first run"),
    Metric("softirq_missed_percent", "%", "lower", "softirq_load",
           "triggers that found the last chain still running",
           floor=0.7, min_level=1.9),
    Metric("ksoftirqd_cpu_percent", "%", "lower", "ksoftirqd",
           "CPU time of all ksoftirqd threads over the measurement"),
    # each CPU's softirq rates (scenarios with softirq_rates,
    # lab/analyse/softirqrates.py): RCU starved behind a NET_RX flood is
    # what stalls a kernel whose early break always restarts at the
    # lowest vector (variants/zijlstra-fix/README.md)
    Metric("rcu_starved_s", "s", "lower", "mpstat",
           "the longest stretch without an RCU softirq on a CPU where "
           "NET_RX ran (per-second samples)"),
]

BY_NAME = {m.name: m for m in LATENCY + COST}


def get(name: str) -> Metric:
    try:
        return BY_NAME[name]
    except KeyError:
        raise LabError(f"metric {name!r} is not declared in "
                       f"lab/base/metrics.py") from None
