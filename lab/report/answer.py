"""The whole answer as one table: approaches by situations.

reports/answer.conf declares the table: its rows (variants) and one
column per situation, each read from a published report's analysis.json
(a scenario and a metric): where the situation was measured more than
once at one plan, the pool of every such run (`python3 -m lab pool`),
so that a cell is the answer of all the evidence, its test stratified
by run.  Each report is judged again under the lab's current rule
(replicate.rejudged), so the whole table is read under one rule.  A
cell is the verdict against the row's base: better or worse with the
ratio of medians; "same" where the shift's interval lies inside the
equivalence margin; otherwise "unresolved" with the interval, which
reaches past the margin; for a base, its median.  Under the table, per
column, how many runs and boots a cell the verdicts rest on, with the
one report they come from.  The table is written into README.md between
two markers (`python3 -m lab answer`), and a test checks that README's
table is the one the reports give.
"""
import functools
import json
import math
import statistics
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from ..base import arches, figures, metrics, paths, stats
from ..analyse import stalls
from ..analyse.analysis import published_verdict
from ..analyse.replicate import rejudged
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
        if len(fields) == 5:
            raise LabError(f"{where}: a column reads one report; pool the "
                           f"runs that measured it again into one "
                           f"(`make pool`) and name the pool")
        if len(fields) != 4 or not all(fields):
            raise LabError(f"{where}: expected 'label | report | scenario "
                           f"| metric', got {raw.strip()!r}")
        metrics.get(fields[3])              # names the metric if unknown
        columns.append(Column(*fields))
    if not rows or not columns:
        raise LabError(f"{path}: needs a 'rows =' line and at least one "
                       f"column")
    return rows, columns


@functools.lru_cache(maxsize=None)
def _analysis(report: str) -> dict:
    """A published report's analysis.json, read once per process, its
    verdicts made again under the lab's current rule."""
    path = paths.REPO / "reports" / report / "data" / "analysis.json"
    if not path.is_file():
        raise LabError(f"{CONF}: report {report!r} has no {path}")
    return rejudged(json.loads(path.read_text()))


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


def no_finding(vs: dict, unit: str = "us") -> str:
    """A comparison with no finding, in words that never read as "no
    change" unless the data show it: "same (within 20%)" where the
    shift's 90% interval lies inside the equivalence margin (as a share
    of the base's median, or in the metric's unit where its floor sets
    the margin), otherwise "unresolved" with the shift's 95% interval in
    the metric's unit ("unresolved, shift -152 to +125 us"): it reaches
    past the margin."""
    base = abs(vs["median"][1])
    if vs.get("same"):
        # where the ratio set the margin it is this product exactly
        # (stats.judged; JSON keeps a float as it was)
        if base and vs["margin"] == stats.EQUIVALENCE_RATIO * base:
            return f"same (within {100 * stats.EQUIVALENCE_RATIO:.0f}%)"
        return f"same (within {_amount(vs['margin'], unit)})"
    lo, hi = vs["shift_interval"]
    return f"unresolved, shift {_amount(lo, unit, '+')} to " \
        f"{_amount(hi, unit, '+')}"


def _amount(v: float, unit: str, sign: str = "") -> str:
    """An amount in a metric's unit: latencies in us or ms, shares as
    percentage points."""
    if unit in ("share", "boots"):
        return f"{100 * v:{sign}.3g} points"
    if unit == "%":
        return f"{v:{sign}.3g} points"
    if unit == "us" and abs(v) >= 1000:
        return f"{v / 1000:{sign}.3g} ms"
    return f"{v:{sign}.3g} {unit}"


def failed_text(analysis: dict, variant: str, col: Column) -> str:
    """"every boot failed", with what the kernel reported where every
    failed boot's console reports the same ("every boot failed: RCU
    stall, CPU 0 in NET_RX"): the report says it boot by boot."""
    said = set()
    for f in analysis["failed"]:
        if f["scenario"] == col.scenario and f["variant"] == variant:
            # a report made before consoles were kept has the reason's
            # quote of the first stall line only
            stall = f.get("stall") or stalls.first_stall(f["reason"])
            said.add(stalls.summary(stall) if stall else None)
    if len(said) == 1 and None not in said:
        return f"every boot failed: {said.pop()}"
    return "every boot failed"


def twin(analysis: dict, variant: str) -> str:
    """The row's variant as a report names it: itself, or where the
    report's guests are another architecture's (the arm64 phone), its
    twin built for that architecture, `<variant>-<arch>`
    (lab/base/arches.py)."""
    names = analysis.get("variants", [])
    if variant in names:
        return variant
    return next((f"{variant}-{a}" for a in arches.ARCHES
                 if f"{variant}-{a}" in names), variant)


def judge(analysis: dict, variant: str, col: Column) -> dict:
    """One cell: {"text", "score"}; score, for the picture, is log10 of
    the ratio, positive where the kernel is better, None where there is
    no verdict (n.s., withheld, a base's own value)."""
    variant = twin(analysis, variant)
    if col.scenario in analysis.get("withheld", {}):
        return {"text": "withheld", "score": None}
    c = analysis["cells"].get(f"{col.scenario}/{variant}")
    base = analysis["bases"].get(variant)
    if not c and any(f["scenario"] == col.scenario and
                     f["variant"] == variant
                     for f in analysis.get("failed", [])):
        return {"text": failed_text(analysis, variant, col),
                "score": None}
    if not c or base is None:
        return {"text": "-", "score": None}
    if base == variant:
        vals = c["per_boot"].get(col.metric) or \
            c.get("cost", {}).get(col.metric)
        if not vals:
            return {"text": "-", "score": None}
        vals = [v for v in vals if v == v]
        return {"text": _value(statistics.median(vals),
                               metrics.get(col.metric).unit),
                "score": None, "base": True}
    vs = c.get("vs_baseline", {}).get(col.metric)    # vs the row's base
    if not vs:
        return {"text": "-", "score": None}
    word = published_verdict(vs)
    if word in ("n.s.", "same") and "shift_interval" in vs:
        return {"text": no_finding(vs, metrics.get(col.metric).unit),
                "score": None}
    if word not in ("lower", "higher"):
        return {"text": word, "score": None}
    good = word == metrics.get(col.metric).better
    ratio = vs.get("ratio")
    size = abs(math.log10(ratio)) if ratio else 2.0
    return {"text": f"{'better' if good else 'worse'} {_ratio(vs)}",
            "score": size if good else -size}


def evidence(analysis: dict, rows: list, col: Column) -> str:
    """How many runs and boots a cell of the column rests on."""
    cells = [analysis["cells"].get(f"{col.scenario}/{twin(analysis, v)}")
             for v in rows]
    boots = sorted(len(c["boots"]) for c in cells if c)
    runs = max((len(set(c.get("runs", ["one"]))) for c in cells if c),
               default=0)
    span = f"{boots[0]}" if boots and boots[0] == boots[-1] else \
        f"{boots[0]}-{boots[-1]}" if boots else "0"
    return f"{runs} run{'s' * (runs != 1)}, {span} boots"


def grid(conf: Path = CONF) -> tuple:
    """(rows, columns, [[judge() per column] per row])."""
    rows, columns = read_conf(conf)
    return rows, columns, [[judge(_analysis(c.report), v, c)
                            for c in columns] for v in rows]


def table(conf: Path = CONF) -> str:
    rows, columns, cells = grid(conf)
    head = "| kernel | " + " | ".join(c.label for c in columns) + " |"
    lines = [head, "|" + "---|" * (len(columns) + 1)]
    for variant, line in zip(rows, cells):
        lines.append(f"| `{variant}` | " +
                     " | ".join(x["text"] for x in line) + " |")
    lines.append("| runs, boots a cell | " + " | ".join(
        f"[{evidence(_analysis(c.report), rows, c)}](reports/{c.report}/)"
        for c in columns) + " |")
    lines += ["", f"![The answer as a picture](reports/{PICTURE.name})"]
    return "\n".join(lines) + "\n"


def picture(out: Path = None, conf: Path = CONF) -> Path:
    """The table as a grid: green where a kernel is better than its base,
    red where worse, the deeper the larger the ratio (log scale, full at
    100x); grey where no difference is shown."""
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
                                       edgecolor="white"))
            dark = x["score"] is not None and abs(x["score"]) > 1
            text = x["text"].split(" (")[0].split(",")[0]
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
                 "  Green better, red worse, grey no finding",
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
