"""The front page's answer table: generated from the reports, current in
README.md, and every declaration error named by file and line."""
import pytest

from lab.report import answer
from lab.base.log import LabError


def test_readme_holds_the_table_the_reports_give():
    assert answer.current() == answer.table(), \
        "README.md's answer is stale: run `python3 -m lab answer`"


def test_every_column_comes_from_a_published_report():
    rows, columns = answer.read_conf()
    assert "baseline" in rows and "stultz-v5" in rows and "zijlstra" in rows
    for c in columns:
        a = answer._analysis(c.report)
        base = answer.twin(a, "baseline")
        assert f"{c.scenario}/{base}" in a["cells"], (c.report, c.scenario)


def test_a_report_of_arm64_guests_gives_each_row_its_twin():
    a = {"variants": ["baseline-arm64", "stultz-v5-arm64"]}
    assert answer.twin(a, "stultz-v5") == "stultz-v5-arm64"
    # a row without a twin there stays itself: its cell is "-"
    assert answer.twin(a, "revert-ksoftirqd") == "revert-ksoftirqd"
    assert answer.twin({"variants": ["stultz-v5"]}, "stultz-v5") == \
        "stultz-v5"


def test_a_malformed_line_is_named(tmp_path):
    conf = tmp_path / "answer.conf"
    conf.write_text("rows = baseline\nlabel | report | scenario\n")
    with pytest.raises(LabError, match=r"answer.conf:2: expected"):
        answer.read_conf(conf)
    conf.write_text("rows = baseline\nlabel | r | s | p42\n")
    with pytest.raises(LabError, match="p42"):
        answer.read_conf(conf)


def analysis(verdict: str, ratio: float, metric: str = "p99",
             **more) -> dict:
    vs = {metric: {"verdict": verdict, "shown": verdict, "ratio": ratio,
                   "median": [30 * ratio, 30], **more}}
    return {"bases": {"baseline": "baseline", "mine": "baseline"},
            "withheld": {},
            "cells": {"s/baseline": {"per_boot": {metric: [30, 10, 20]},
                                     "cost": {}, "boots": [1, 2, 3]},
                      "s/mine": {"per_boot": {}, "vs_baseline": vs,
                                 "boots": [1, 2, 3]}}}


def cell(a: dict, variant: str, col) -> str:
    return answer.judge(a, variant, col)["text"]


def test_a_cell_reads_as_better_or_worse_with_its_ratio():
    col = answer.Column("x", "r", "s", "p99")
    assert cell(analysis("lower", 0.02), "mine", col) == "better x0.02"
    assert cell(analysis("lower", 0.02), "baseline", col) == "20 us"
    # a base's value is its median, between the middle two of an even count
    even = analysis("lower", 0.02)
    even["cells"]["s/baseline"]["per_boot"]["p99"] = [30, 10, 20, 40]
    assert cell(even, "baseline", col) == "25 us"
    kpps = answer.Column("x", "r", "s", "nic_app_kpps")
    assert cell(analysis("lower", 0.01, "nic_app_kpps"), "mine", kpps) == \
        "worse x0.01"
    # a small verdict is not a finding
    assert cell(analysis("small lower", 0.9), "mine", col) == "n.s."
    withheld = dict(analysis("lower", 0.02), withheld={"s": "null control"})
    assert cell(withheld, "mine", col) == "withheld"
    failed = dict(analysis("lower", 0.02), cells={}, failed=[
        {"scenario": "s", "variant": "mine", "boot": 1, "reason": "hung"}])
    assert cell(failed, "mine", col) == "every boot failed"
    # a reason that quotes a stall line, without a console
    failed["failed"][0]["reason"] = ("guest hung: killed by the watchdog "
                                     "after 444 s; the kernel reported: "
                                     "[ 23.8] rcu: INFO: rcu_preempt "
                                     "self-detected stall on CPU; ...")
    assert cell(failed, "mine", col) == "every boot failed: RCU stall"
    # where every failed boot's console reports the same, the cell says it
    stall = {"line": "rcu: INFO: rcu_sched self-detected stall on CPU",
             "at_s": 29.2, "cpu": 0, "task": "ksoftirqd/0",
             "vector": "NET_RX", "handler": "net_rx_action"}
    failed["failed"] = [{"scenario": "s", "variant": "mine", "boot": b,
                         "reason": "kernel reported trouble:",
                         "stall": stall} for b in (1, 2)]
    assert cell(failed, "mine", col) == \
        "every boot failed: RCU stall, CPU 0 in NET_RX"
    failed["failed"][1] = dict(failed["failed"][1], stall=dict(
        stall, line="watchdog: BUG: soft lockup - CPU#1 stuck for 22s!",
        cpu=1, vector=None))
    assert cell(failed, "mine", col) == "every boot failed"


def test_no_finding_never_reads_as_no_change_without_an_interval():
    """n.s. is "same" only where the equivalence interval says so; else
    the cell gives the interval, as a share of the base's median."""
    col = answer.Column("x", "r", "s", "p99")
    alike = analysis("n.s.", 1.0, shift_interval=[-2, 1], same=True,
                     margin=6.0)
    assert cell(alike, "mine", col) == "same (within 20%)"
    wide = analysis("n.s.", 0.8, shift_interval=[-27, 38.7], same=False,
                    margin=6.0)
    assert cell(wide, "mine", col) == "unresolved, shift -27 us to +38.7 us"
    ms = analysis("n.s.", 0.8, shift_interval=[-6400, 1600], same=False,
                  margin=6.0)
    assert cell(ms, "mine", col) == "unresolved, shift -6.4 ms to +1.6 ms"


def test_the_evidence_row_counts_runs_and_boots():
    col = answer.Column("x", "r", "s", "p99")
    a = analysis("lower", 0.02)
    assert answer.evidence(a, ["baseline", "mine"], col) == \
        "1 run, 3 boots"
    a["cells"]["s/mine"]["runs"] = ["e", "e", "f"]
    a["cells"]["s/mine"]["boots"] = [1, 2, 3, 4]
    assert answer.evidence(a, ["baseline", "mine"], col) == \
        "2 runs, 3-4 boots"


def test_a_column_names_one_report(tmp_path):
    conf = tmp_path / "answer.conf"
    conf.write_text("rows = baseline\nlabel | r | s | p99 | r2, r3\n")
    with pytest.raises(LabError, match=r"answer.conf:2: a column reads one "
                       r"report"):
        answer.read_conf(conf)


def test_the_picture_is_drawn_from_the_same_cells(tmp_path):
    out = answer.picture(tmp_path / "answer.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "reports/answer.png" in answer.table()
    assert answer.PICTURE.is_file()
    rows, columns, cells = answer.grid()
    assert len(cells) == len(rows) and all(len(x) == len(columns)
                                           for x in cells)
    # a better verdict scores above 0, a worse one below, n.s. none
    scored = [x for line in cells for x in line if x["score"] is not None]
    assert all((x["score"] > 0) == x["text"].startswith("better")
               for x in scored)
