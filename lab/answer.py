"""The whole answer as one table: approaches by situations.

reports/answer.conf declares the table: its rows (variants) and one
column per situation, each read from a published report's analysis.json
(a scenario and a metric), optionally with a second report that measured
the same cell again.  A cell is its report's verdict against the row's
base, as better or worse, with the ratio of medians; for a base, the
base's median.  A verdict that the second report does not repeat is
marked; "small" verdicts are shown as n.s.  The table is
written into README.md between two markers (`python3 -m lab answer`),
and a test checks that README's table is the one the reports give.
"""
import json
import re
from dataclasses import dataclass
from pathlib import Path

from . import metrics, paths
from .log import LabError

CONF = paths.REPO / "reports" / "answer.conf"
README = paths.REPO / "README.md"
BEGIN = "<!-- answer: begin, written by `python3 -m lab answer` -->"
END = "<!-- answer: end -->"


@dataclass(frozen=True)
class Column:
    label: str
    report: str
    scenario: str
    metric: str
    again: str = ""         # a report that measured the same cell again


def read_conf(path: Path = CONF) -> tuple:
    """(rows, columns) from the declaration; errors name file and line."""
    rows, columns = [], []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{path}:{number}"
        if line.startswith("rows ="):
            rows = line.split("=", 1)[1].split()
            continue
        fields = [f.strip() for f in line.split("|")]
        if len(fields) not in (4, 5) or not all(fields[:4]):
            raise LabError(f"{where}: expected 'label | report | scenario "
                           f"| metric [| again]', got {raw.strip()!r}")
        metrics.get(fields[3])              # names the metric if unknown
        columns.append(Column(*fields))
    if not rows or not columns:
        raise LabError(f"{path}: needs a 'rows =' line and at least one "
                       f"column")
    return rows, columns


def _analysis(report: str) -> dict:
    path = paths.REPO / "reports" / report / "data" / "analysis.json"
    if not path.is_file():
        raise LabError(f"{CONF}: report {report!r} has no {path}")
    return json.loads(path.read_text())


def _value(v: float, unit: str) -> str:
    if unit == "us":
        return f"{v / 1000:.1f} ms" if v >= 1000 else f"{v:.0f} us"
    return f"{v:.3g} {unit}".replace("percent", "%")


def _shown(vs: dict) -> str:
    """The verdict as a report prints it; "small" ones are not shown
    (they did not repeat between two runs of the default matrix)."""
    word = vs.get("shown", vs["verdict"])
    return "n.s." if word.startswith("small ") else word


def _ratio(vs: dict) -> str:
    r = vs.get("ratio")
    if r is None:                       # the base's median is 0
        return f"{vs['median'][0] - vs['median'][1]:+.3g} (base 0)"
    return f"x{r:.0f}" if r >= 10 else f"x{r:.2g}"


def cell(analysis: dict, again: dict, variant: str, col: Column) -> str:
    if col.scenario in analysis.get("withheld", {}):
        return "withheld"
    c = analysis["cells"].get(f"{col.scenario}/{variant}")
    base = analysis["bases"].get(variant)
    if not c or base is None:
        return "-"
    if base == variant:
        vals = c["per_boot"].get(col.metric) or \
            c.get("cost", {}).get(col.metric)
        if not vals:
            return "-"
        vals = sorted(v for v in vals if v == v)
        return _value(vals[len(vals) // 2], metrics.get(col.metric).unit)
    vs = c.get("vs_baseline", {}).get(col.metric)    # vs the row's base
    if not vs:
        return "-"
    word = _shown(vs)
    if word not in ("lower", "higher"):
        return word
    good = word == metrics.get(col.metric).better
    text = f"{'better' if good else 'worse'} {_ratio(vs)}"
    if again:
        other = again["cells"].get(f"{col.scenario}/{variant}", {}).get(
            "vs_baseline", {}).get(col.metric)
        if other is None or _shown(other) != word:
            text += " (not repeated)"
    return text


def table(conf: Path = CONF) -> str:
    rows, columns = read_conf(conf)
    loaded = {}

    def get(report):
        if report and report not in loaded:
            loaded[report] = _analysis(report)
        return loaded.get(report, {})
    head = "| kernel | " + " | ".join(c.label for c in columns) + " |"
    lines = [head, "|" + "---|" * (len(columns) + 1)]
    for variant in rows:
        cells = [cell(get(c.report), get(c.again), variant, c)
                 for c in columns]
        lines.append(f"| `{variant}` | " + " | ".join(cells) + " |")
    sources = sorted({c.report for c in columns} |
                     {c.again for c in columns if c.again})
    lines += ["", "From " + ", ".join(f"`reports/{r}/`" for r in sources)
              + " (`reports/answer.conf` says which cell comes from "
              "which)."]
    return "\n".join(lines) + "\n"


def current(readme: Path = README) -> str:
    """The table README.md holds between the markers."""
    m = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END),
                  readme.read_text(), re.S)
    if not m:
        raise LabError(f"{readme}: no {BEGIN!r} ... {END!r} markers")
    return m.group(1)


def write(readme: Path = README, conf: Path = CONF) -> None:
    text = readme.read_text()
    current(readme)
    start = text.index(BEGIN) + len(BEGIN) + 1
    readme.write_text(text[:start] + table(conf) + text[text.index(END):])
