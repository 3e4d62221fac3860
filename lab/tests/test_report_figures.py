"""Figures typed by hand in prose match the data: every ratio ("x0.19")
and q-value ("q = 0.025") in a current report's README, and on the
front page, is one that report's (or the answer's reports')
analysis.json holds, to the digits printed."""
import json
import re

import pytest

from lab.report import answer, index as report_index
from lab.base import paths

RATIO = re.compile(r"\bx(\d+(?:\.\d+)?)\b")
Q = re.compile(r"\bq = (0\.\d+)")


def numbers(analysis: dict, key: str) -> list:
    out = []

    def walk(o):
        if isinstance(o, dict):
            if isinstance(o.get(key), (int, float)):
                out.append(o[key])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(analysis)
    return out


def unmatched(text: str, analyses: list) -> list:
    ratios = [r for a in analyses for r in numbers(a, "ratio")]
    qs = [q for a in analyses for q in numbers(a, "q")]
    bad = []
    for pattern, values in ((RATIO, ratios), (Q, qs)):
        for m in pattern.finditer(text):
            v = m.group(1)
            digits = len(v.split(".")[1]) if "." in v else 0
            if not any(round(x, digits) == float(v) or f"{x:.2g}" == v
                       for x in values):
                bad.append(m.group(0))
    return bad


def current_reports() -> list:
    return [name for name, s in report_index.read_status().items()
            if s.startswith("current") and
            (report_index.REPORTS / name / "data" /
             "analysis.json").is_file() and
            (report_index.REPORTS / name / "README.md").is_file()]


@pytest.mark.parametrize("name", current_reports())
def test_a_current_reports_prose_figures_are_its_data(name):
    folder = report_index.REPORTS / name
    a = json.loads((folder / "data" / "analysis.json").read_text())
    assert not unmatched((folder / "README.md").read_text(), [a])


def test_the_front_pages_prose_figures_are_the_answers_data():
    _, columns = answer.read_conf()
    reports = {c.report for c in columns}
    text = (paths.REPO / "README.md").read_text()
    prose = text[text.index(answer.END):]
    assert not unmatched(prose, [answer._analysis(r) for r in reports])


def test_a_typed_figure_the_data_lacks_is_caught():
    a = {"cells": {"s/v": {"vs_baseline": {"p99": {"ratio": 0.1923,
                                                   "q": 0.0254}}}}}
    assert unmatched("p99.9 x0.19, q = 0.025", [a]) == []
    assert unmatched("p99.9 x0.18, q = 0.04", [a]) == ["x0.18", "q = 0.04"]
