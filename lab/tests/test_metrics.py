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
