"""Metrics are declared once (lab/base/metrics.py) and the guest agrees."""
import math
import re

import numpy as np
import pytest

from lab.base import metrics, paths
from lab.analyse import results
from lab.base.log import LabError


def test_guest_tools_print_no_metrics():
    """What a load achieved comes from the kernel's counters over the
    measurement, not from a tool that ran over another window."""
    for tool in (paths.GUEST_DIR / "bin").iterdir():
        assert not re.search(r'echo "metric ', tool.read_text()), tool.name


def test_directions_are_declared():
    for m in metrics.LATENCY + metrics.COST:
        assert m.better in ("lower", "higher"), m.name
    assert metrics.get("block_read_mb_s").better == "higher"
    assert metrics.get("p99").better == "lower"


def test_the_modules_counters_over_the_measurement_are_cost_metrics(
        tmp_path):
    """module-stats-measured (the module's stats line, reset when the
    measurement starts) gives the softirq_load metrics."""
    assert results.module_metrics(tmp_path) == {}
    (tmp_path / "module-stats-measured").write_text(
        "vector=block spin_us=5000 period_us=20000 cpu=0 burst=1 fires=500 "
        "triggers=125 missed=375 short=0 runs=125 inline=100 ksoftirqd=25 "
        "inline_idle=50 inline_rt=50 delay_total_ns=9 delay_max_ns=1500000 "
        "last_cpu=0\n")
    got = {k: v["value"] for k, v in results.module_metrics(tmp_path).items()}
    assert got == {"softirq_over_rt_percent": 40.0,
                   "softirq_wait_max_us": 1500.0,
                   "softirq_missed_percent": 75.0}
    # with the measurement's length, the runs per guest second: a share
    # alone hides that one kernel ran four times the work
    got = {k: v["value"]
           for k, v in results.module_metrics(tmp_path, 12.5).items()}
    assert got["softirq_over_rt_per_s"] == 4.0
    assert got["softirq_runs_per_s"] == 10.0
    (tmp_path / "module-stats-measured").write_text("runs=1\n")
    with pytest.raises(LabError, match="module-stats-measured: not the"):
        results.module_metrics(tmp_path)


def _net(uptime, rx, read, full, squeezes, sent=0, lo_bytes=0,
         disk=None, noports=3):
    return (f"uptime {uptime}\nrx_packets eth0 {rx}\nrx_bytes eth0 0\n"
            f"rx_packets lo 7\nrx_bytes lo {lo_bytes}\n"
            "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\n"
            f"Udp: {read} {noports} 0 {sent} {full}\n"
            f"softnet 0000a000 00000000 {squeezes:08x} 00000000\n"
            "softnet 00000100 00000000 00000001 00000000\n" +
            (f"disk vda 10 0 {disk[0]} 40 5 0 {disk[1]} 60 0 90 100\n"
             if disk else ""))


def _values(run_dir):
    return {k: m["value"]
            for k, m in results.counter_metrics(run_dir).items()}


def test_nic_metrics_cover_the_measurement_from_the_counters(tmp_path):
    (tmp_path / "net-before").write_text(_net(10.0, 100, 50, 0, 2))
    (tmp_path / "net-after").write_text(_net(20.0, 20100, 15050, 5000, 30,
                                             noports=5003))
    # 5000 datagrams before the receiver bound its socket: a fifth of
    # the 25000 UDP took in (the drop share counts only those that
    # reached the socket)
    assert _values(tmp_path) == {
        "nic_rx_kpps": 2.0, "nic_app_kpps": 1.5,
        "nic_rcvbuf_drop_percent": 25.0, "nic_unbound_percent": 20.0,
        "net_rx_squeezes": 28}
    assert results.measured_seconds(tmp_path) == 10.0
    # no NIC, no UDP sent, no disk: no metrics
    (tmp_path / "net-after").write_text(_net(20.0, 0, 0, 0, 2).replace(
        "rx_packets eth0 0\n", ""))
    (tmp_path / "net-before").write_text(_net(10.0, 0, 0, 0, 2).replace(
        "rx_packets eth0 0\n", ""))
    assert results.counter_metrics(tmp_path) == {}
    (tmp_path / "net-after").write_text("uptime x\n")
    with pytest.raises(LabError, match="net-before, net-after"):
        results.counter_metrics(tmp_path)


def test_loopback_flood_and_disk_metrics_cover_the_measurement(tmp_path):
    """The UDP flood's and the disk loads' work over cyclictest's run:
    loopback's received bytes and the datagrams sent but not received,
    the disk's 512-byte sectors read and written."""
    (tmp_path / "net-before").write_text(
        _net(10.0, 0, 100, 0, 0, sent=100, lo_bytes=0, disk=(0, 0)))
    (tmp_path / "net-after").write_text(
        _net(20.0, 0, 900, 0, 0, sent=1100, lo_bytes=125_000_000,
             disk=(200_000, 100_000)))
    got = _values(tmp_path)
    assert got["udp_rx_mbit_s"] == 100.0
    assert got["udp_lost_percent"] == 20.0
    assert got["block_read_mb_s"] == 10.24
    assert got["block_write_mb_s"] == 5.12
    for name in got:
        metrics.get(name)      # every one declared


def test_a_tail_quantile_needs_samples_beyond_it():
    """p99.99 of a 10 s boot (10,000 samples) would be its max under
    another name: it is left out; 50,000 samples give it."""
    ten_s = np.arange(1, 10_001, dtype=float)
    by = {m.name: m for m in metrics.LATENCY}
    assert by["p99.9"].of_samples(ten_s) == 9990
    assert math.isnan(by["p99.99"].of_samples(ten_s))
    assert by["max"].of_samples(ten_s) == 10_000
    long = np.arange(1, 50_001, dtype=float)
    assert by["p99.99"].of_samples(long) == 49_995


def test_the_modules_counts_take_more_than_three_events_as_an_effect():
    # a 10 s measurement has about 515 triggers; each boot's share in %
    from lab.base import stats
    m = metrics.get("softirq_missed_percent")
    one = 100 / 515
    base = [0, 0, one, 0, 0]
    three = [3 * one] * 5                     # 3 missed triggers a boot
    five = [5 * one] * 5
    assert stats.compare(three, base, m.better, m.min_effect)[
        "verdict"] == "n.s."
    assert stats.compare(five, base, m.better, m.min_effect)[
        "verdict"] == "higher"
    assert metrics.get("softirq_over_rt_per_s").min_effect > 3 / 10.2
