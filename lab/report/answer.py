"""The whole answer as one table: approaches by situations.

reports/answer.conf declares the table: its rows (variants) and one
column per situation, each read from a published report's analysis.json
(a scenario and a metric), optionally with the reports that measured the
same cell again.  A cell is its report's verdict against the row's
base, as better or worse, with the ratio of medians; for a base, the
base's median.  A verdict that any of the other reports does not repeat
is marked, and so is an n.s. that another report has as a finding;
"small" verdicts are shown as n.s.  The table is
written into README.md between two markers (`python3 -m lab answer`),
and a test checks that README's table is the one the reports give.
"""
import functools
import json
import math
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from ..base import figures, metrics, paths, unresolved
from ..analyse.analysis import published_verdict
from ..base.log import LabError

CONF = paths.REPO / "reports" / "answer.conf"
README = paths.REPO / "README.md"
PICTURE = paths.REPO / "reports" / "answer.png"
BEGIN = "<!-- answer: begin, written by `python3 -m lab answer` -->"
END = "<!-- answer: end -->"


@dataclass(frozen=True)
class Column:
    label: str
    report: str
    scenario: str
    metric: str
    again: tuple = ()       # reports that measured the same cell again


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
                           f"| metric [| again, ...]', got {raw.strip()!r}")
        metrics.get(fields[3])              # names the metric if unknown
        again = tuple(r.strip() for r in fields[4].split(",")
                      if r.strip()) if len(fields) == 5 else ()
        columns.append(Column(*fields[:4], again))
    if not rows or not columns:
        raise LabError(f"{path}: needs a 'rows =' line and at least one "
                       f"column")
    return rows, columns


@functools.lru_cache(maxsize=None)
def _analysis(report: str) -> dict:
    """A published report's analysis.json, read once per process."""
    path = paths.REPO / "reports" / report / "data" / "analysis.json"
    if not path.is_file():
        raise LabError(f"{CONF}: report {report!r} has no {path}")
    return json.loads(path.read_text())


def _value(v: float, unit: str) -> str:
    if unit == "share":
        return f"{100 * v:.3g}%"
    if unit == "us":
        return f"{v / 1000:.1f} ms" if v >= 1000 else f"{v:.0f} us"
    return f"{v:.3g} {unit}"


def _ratio(vs: dict) -> str:
    r = vs.get("ratio")
    if r is None:                       # the base's median is 0
        return f"{vs['median'][0] - vs['median'][1]:+.3g} (base 0)"
    if r == 0:
        return "to 0"
    return f"x{r:.0f}" if r >= 10 else f"x{r:.2g}"


def judge(analysis: dict, again: list, variant: str, col: Column) -> dict:
    """One cell: {"text", "score"}; score, for the picture, is log10 of
    the ratio, positive where the kernel is better, None where there is
    no verdict (n.s., withheld, a base's own value)."""
    if col.scenario in analysis.get("withheld", {}):
        return {"text": "withheld", "score": None}
    c = analysis["cells"].get(f"{col.scenario}/{variant}")
    base = analysis["bases"].get(variant)
    if not c and any(f["scenario"] == col.scenario and
                     f["variant"] == variant
                     for f in analysis.get("failed", [])):
        return {"text": "every boot failed", "score": None}
    if not c or base is None:
        return {"text": "-", "score": None}
    if base == variant:
        vals = c["per_boot"].get(col.metric) or \
            c.get("cost", {}).get(col.metric)
        if not vals:
            return {"text": "-", "score": None}
        vals = sorted(v for v in vals if v == v)
        return {"text": _value(vals[len(vals) // 2],
                               metrics.get(col.metric).unit),
                "score": None, "base": True}
    vs = c.get("vs_baseline", {}).get(col.metric)    # vs the row's base
    if not vs:
        return {"text": "-", "score": None}
    # a comparison declared unresolved is one whichever report it is
    # read from, however that report printed it
    word = "unresolved" if (col.scenario, variant, col.metric) in \
        unresolved.load() else published_verdict(vs)
    others = [published_verdict(o) if o else None for o in (
        other["cells"].get(f"{col.scenario}/{variant}", {}).get(
            "vs_baseline", {}).get(col.metric) for other in again)]
    if word not in ("lower", "higher"):
        found = [o for o in others if o in ("lower", "higher")]
        if not found:
            return {"text": word, "score": None}
        # no finding here, one elsewhere: the cell is not settled either
        return {"text": f"{word} ({found[0]} in {len(found)} of "
                        f"{len(others)} other runs)", "score": None,
                "not_repeated": True}
    good = word == metrics.get(col.metric).better
    ratio = vs.get("ratio")
    size = abs(math.log10(ratio)) if ratio else 2.0
    out = {"text": f"{'better' if good else 'worse'} {_ratio(vs)}",
           "score": size if good else -size}
    if any(o != word for o in others):
        out["text"] += " (not repeated)"
        out["not_repeated"] = True
    return out


def cell(analysis: dict, again: list, variant: str, col: Column) -> str:
    return judge(analysis, again, variant, col)["text"]


def grid(conf: Path = CONF) -> tuple:
    """(rows, columns, [[judge() per column] per row])."""
    rows, columns = read_conf(conf)
    return rows, columns, [[judge(_analysis(c.report),
                                  [_analysis(r) for r in c.again], v, c)
                            for c in columns] for v in rows]


def table(conf: Path = CONF) -> str:
    rows, columns, cells = grid(conf)
    head = "| kernel | " + " | ".join(c.label for c in columns) + " |"
    lines = [head, "|" + "---|" * (len(columns) + 1)]
    for variant, line in zip(rows, cells):
        lines.append(f"| `{variant}` | " +
                     " | ".join(x["text"] for x in line) + " |")
    lines.append("| measured again by | " + " | ".join(
        ", ".join(f"`{r}`" for r in c.again) or "- (one run)"
        for c in columns) + " |")
    sources = sorted({c.report for c in columns} |
                     {r for c in columns for r in c.again})
    lines += ["", "From (`reports/answer.conf` says which cell comes from "
              "which): " + "; ".join(f"`reports/{r}/` ({_test(r)})"
                                     for r in sources) + ".", "",
              f"![The answer as a picture](reports/{PICTURE.name})"]
    return "\n".join(lines) + "\n"


def _test(report: str) -> str:
    """The statistics a report's verdicts were made with."""
    if "family_size" in _analysis(report):
        return "two-sided rank test, p < 0.01 and Benjamini-Hochberg q < 0.05"
    return ("one-sided rank test, p < 0.01, no false-discovery "
            "adjustment: made before the lab's two-sided test")


def picture(out: Path = None, conf: Path = CONF) -> Path:
    """The table as a grid: green where a kernel is better than its base,
    red where worse, the deeper the larger the ratio (log scale, full at
    100x); grey where no difference is shown; hatched where the second
    run did not repeat the verdict."""
    out = out or PICTURE
    rows, columns, cells = grid(conf)
    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(2 + 1.25 * len(columns),
                                    1 + 0.55 * len(rows)))
    cmap = plt.get_cmap("RdYlGn")
    for i, line in enumerate(cells):
        for j, x in enumerate(line):
            if x["score"] is not None:
                colour = cmap(0.5 + max(-1.0, min(1.0, x["score"] / 2)) / 2)
            else:
                colour = "white" if x.get("base") else "0.88"
            ax.add_patch(plt.Rectangle((j, i), 1, 1, facecolor=colour,
                                       edgecolor="white",
                                       hatch="//" if x.get("not_repeated")
                                       else None))
            dark = x["score"] is not None and abs(x["score"]) > 1
            text = x["text"].split(" (")[0] + \
                ("*" if x.get("not_repeated") else "")
            ax.text(j + 0.5, i + 0.5, text.replace(
                " ", "\n", 1), ha="center", va="center", fontsize=7,
                color="white" if dark else "black")
    ax.set_xlim(0, len(columns))
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([j + 0.5 for j in range(len(columns))])
    ax.set_xticklabels([textwrap.fill(c.label, 16) for c in columns],
                       fontsize=7, rotation=0)
    ax.xaxis.tick_top()
    ax.set_yticks([i + 0.5 for i in range(len(rows))])
    ax.set_yticklabels(rows, fontsize=8)
    ax.set_title("Each kernel against its base (a base's row: its median)."
                 "  Green better, red worse, grey n.s.; * not repeated",
                 fontsize=8, y=-0.08)
    fig.tight_layout()
    figures.save(fig, out)
    return out


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
