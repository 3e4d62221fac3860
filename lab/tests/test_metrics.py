"""Metrics are declared once (lab/metrics.py) and the guest agrees."""
import re

import pytest

from lab import metrics, paths, results
from lab.log import LabError

ECHO = re.compile(r'echo "metric (\S+) .* (\S+)"$')


def tool_lines() -> dict:
    """{metric: (tool, unit)} of every `metric` line the guest tools print."""
    out = {}
    for tool in (paths.GUEST_DIR / "bin").iterdir():
        for line in tool.read_text(errors="replace").splitlines():
            m = ECHO.search(line.strip())
            if m:
                out[m.group(1)] = (tool.name, m.group(2))
    return out


def test_every_guest_metric_is_declared_by_its_tool_and_unit():
    printed = tool_lines()
    declared = {m.name: (m.source, m.unit) for m in metrics.COST
                if (paths.GUEST_DIR / "bin" / m.source).is_file()}
    assert printed and printed == declared


def test_directions_are_declared():
    for m in metrics.LATENCY + metrics.COST:
        assert m.better in ("lower", "higher"), m.name
    assert metrics.get("block_read_mb_s").better == "higher"
    assert metrics.get("p99").better == "lower"


def test_an_undeclared_metric_line_names_its_log_and_line(tmp_path):
    (tmp_path / "bg-1.log").write_text(
        "started\nmetric block_read_mb_s 12 MB/s\nmetric made_up 3 x\n")
    with pytest.raises(LabError, match=r"bg-1.log:3: metric 'made_up' is "
                       r"not declared"):
        results.tool_metrics(tmp_path)
    (tmp_path / "bg-1.log").write_text("metric block_read_mb_s 12 KB/s\n")
    with pytest.raises(LabError, match=r"bg-1.log:1: .*declared in 'MB/s'"):
        results.tool_metrics(tmp_path)
    (tmp_path / "bg-1.log").write_text("metric block_read_mb_s 12 MB/s\n")
    assert results.tool_metrics(tmp_path) == {
        "block_read_mb_s": {"value": 12.0, "unit": "MB/s"}}


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
    (tmp_path / "module-stats-measured").write_text("runs=1\n")
    with pytest.raises(LabError, match="module-stats-measured: not the"):
        results.module_metrics(tmp_path)
    with pytest.raises(LabError, match="not declared as a guest tool's"):
        metrics.from_tool("softirq_wait_max_us", "us", "bg-0.log:1")


def _net(uptime, rx, read, full, squeezes):
    return (f"uptime {uptime}\nrx_packets eth0 {rx}\nrx_packets lo 7\n"
            "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\n"
            f"Udp: {read} 3 0 0 {full}\n"
            f"softnet 0000a000 00000000 {squeezes:08x} 00000000\n"
            "softnet 00000100 00000000 00000001 00000000\n")


def test_nic_metrics_cover_the_measurement_from_the_counters(tmp_path):
    (tmp_path / "net-before").write_text(_net(10.0, 100, 50, 0, 2))
    (tmp_path / "net-after").write_text(_net(20.0, 20100, 15050, 5000, 30))
    got = {k: m["value"] for k, m in results.nic_metrics(tmp_path).items()}
    assert got == {"nic_rx_kpps": 2.0, "nic_app_kpps": 1.5,
                   "nic_rcvbuf_drop_percent": 25.0, "net_rx_squeezes": 28}
    # no NIC but loopback: not a NIC scenario, no metrics
    (tmp_path / "net-after").write_text(_net(20.0, 0, 0, 0, 2).replace(
        "rx_packets eth0 0\n", ""))
    (tmp_path / "net-before").write_text(_net(10.0, 0, 0, 0, 2).replace(
        "rx_packets eth0 0\n", ""))
    assert results.nic_metrics(tmp_path) == {}
    (tmp_path / "net-after").write_text("uptime x\n")
    with pytest.raises(LabError, match="net-before, net-after"):
        results.nic_metrics(tmp_path)
