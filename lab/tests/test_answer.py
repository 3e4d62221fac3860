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
        assert f"{c.scenario}/baseline" in a["cells"], (c.report, c.scenario)


def test_a_malformed_line_is_named(tmp_path):
    conf = tmp_path / "answer.conf"
    conf.write_text("rows = baseline\nlabel | report | scenario\n")
    with pytest.raises(LabError, match=r"answer.conf:2: expected"):
        answer.read_conf(conf)
    conf.write_text("rows = baseline\nlabel | r | s | p42\n")
    with pytest.raises(LabError, match="p42"):
        answer.read_conf(conf)


def analysis(verdict: str, ratio: float, metric: str = "p99") -> dict:
    vs = {metric: {"verdict": verdict, "shown": verdict, "ratio": ratio}}
    return {"bases": {"baseline": "baseline", "mine": "baseline"},
            "withheld": {},
            "cells": {"s/baseline": {"per_boot": {metric: [30, 10, 20]},
                                     "cost": {}},
                      "s/mine": {"per_boot": {}, "vs_baseline": vs}}}


def test_a_cell_reads_as_better_or_worse_with_its_ratio():
    col = answer.Column("x", "r", "s", "p99")
    assert answer.cell(analysis("lower", 0.02), [], "mine", col) == \
        "better x0.02"
    assert answer.cell(analysis("lower", 0.02), [], "baseline", col) == \
        "20 us"
    kpps = answer.Column("x", "r", "s", "nic_app_kpps")
    assert answer.cell(analysis("lower", 0.01, "nic_app_kpps"), [], "mine",
                       kpps) == "worse x0.01"
    # a small verdict is not a finding
    assert answer.cell(analysis("small lower", 0.9), [], "mine", col) == \
        "n.s."


def test_a_verdict_the_second_run_does_not_give_is_marked():
    col = answer.Column("x", "r", "s", "p99", again=("r2", "r3"))
    first = analysis("lower", 0.02)
    same = analysis("lower", 0.03)
    assert answer.cell(first, [same, same], "mine", col) == "better x0.02"
    # one repeat that does not give it is enough to mark it
    assert answer.cell(first, [same, analysis("n.s.", 1.0)], "mine",
                       col) == "better x0.02 (not repeated)"
    # no finding here, one in another run: marked too
    assert answer.cell(analysis("n.s.", 1.0), [same, analysis("n.s.", 1.0)],
                       "mine", col) == "n.s. (lower in 1 of 2 other runs)"
    withheld = dict(first, withheld={"s": "null control"})
    assert answer.cell(withheld, [], "mine", col) == "withheld"
    failed = dict(first, cells={}, failed=[
        {"scenario": "s", "variant": "mine", "boot": 1, "reason": "hung"}])
    assert answer.cell(failed, [], "mine", col) == "every boot failed"


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


def test_a_comparison_declared_unresolved_reads_so_from_any_report(
        monkeypatch):
    col = answer.Column("x", "r", "s", "p99", again=("r2",))
    monkeypatch.setattr(answer.unresolved, "load",
                        lambda path=None: {("s", "mine", "p99"): "flips"})
    # printed "lower" by a report older than the declaration
    assert answer.cell(analysis("lower", 0.02), [analysis("n.s.", 1.0)],
                       "mine", col) == "unresolved"
    assert answer.cell(analysis("n.s.", 1.0), [analysis("lower", 0.02)],
                       "mine", col) == "unresolved (lower in 1 of 1 other runs)"
