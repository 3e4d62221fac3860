"""How often would two runs of a plan disagree on a finding, at a given
number of boots a cell?

`python3 -m lab power REPORT [REPORT ...] --boots 5,10,15` takes every
boot the reports measured of each compared cell as the distribution a
boot is drawn from, draws pairs of simulated runs of n boots a cell
(with replacement), and judges each comparison the reports print (each
cell's lead metric and its cost metrics against its base) under the
lab's current rules (stats.compare; the family's false-discovery step
left out, as it depends on the rest of the report).  Per comparison it
gives p, the share of runs in which it is a finding (lower or higher),
and 2p(1 - p), the chance that two independent runs disagree on it; the
sum over comparisons is the number of disagreements a pair of runs
should expect.

This is how a scenario's `boots` is chosen (common/scenarios/README.md):
a comparison whose base has a rare mode (one boot in a dozen far from
the rest) is decided at 5 boots by whether such a boot was drawn.  The
model treats boots as independent draws and the measured boots as the
whole distribution: a mode the reports never caught is not in it.
"""
from collections import defaultdict

import numpy as np

from ..base import metrics, stats
from . import analysis


def _pooled(analyses: list) -> tuple[dict, dict, dict, dict]:
    """{cell: {metric: every boot's value}}, bases, leads and tail
    metrics over the analyses (the first one's where they differ)."""
    values = defaultdict(lambda: defaultdict(list))
    bases, lead, tail = {}, {}, {}
    for a in analyses:
        for k, v in a["bases"].items():
            bases.setdefault(k, v)
        for k, v in a.get("lead", {}).items():
            lead.setdefault(k, v)
        for k, v in a.get("tail", {}).items():
            tail.setdefault(k, v)
        for key, c in a["cells"].items():
            for m, vs in [*c["per_boot"].items(), *c["cost"].items()]:
                values[key][m] += [x for x in vs if x == x]
    return values, bases, lead, tail


def comparisons(analyses: list) -> list:
    """(cell, metric, the variant's boots, the base's boots) for every
    comparison a report of these cells prints."""
    values, bases, lead, tail = _pooled(analyses)
    out = []
    for key in sorted(values):
        scen, var = key.split("/")
        base = f"{scen}/{bases.get(var, var)}"
        if base == key or base not in values:
            continue
        judged = analysis.judged_tail({"lead": lead, "tail": tail}, scen)
        names = judged + sorted(
            m for m in values[key] if m in metrics.BY_NAME
            and metrics.get(m) in metrics.COST)
        out += [(key, m, values[key][m], values[base][m]) for m in names
                if values[key][m] and values[base][m]]
    return out


def finding_rate(variant: list, base: list, metric: str, boots: int,
                 trials: int, rng: np.random.Generator) -> float:
    """The share of `trials` simulated runs of `boots` boots a side in
    which the comparison is a finding."""
    m = metrics.get(metric)
    found = 0
    for _ in range(trials):
        c = stats.compare(rng.choice(variant, boots), rng.choice(base, boots),
                          m.better, m.min_effect, m.min_level,
                          binary=m.binary)
        found += c["verdict"] in ("lower", "higher")
    return found / trials


def disagreement(analyses: list, boots: tuple = (5, 10, 15),
                 trials: int = 200, seed: int = 1, cells=()) -> list:
    """Per comparison: {cell, metric, boots: {n: P(finding)}} with the
    variant's and base's boots measured; only `cells` where given."""
    rng = np.random.default_rng(seed)
    rows = []
    for key, m, v, b in comparisons(analyses):
        if cells and key not in cells:
            continue
        rows.append({"cell": key, "metric": m, "measured": [len(v), len(b)],
                     "found": {n: finding_rate(v, b, m, n, trials, rng)
                               for n in boots}})
    return rows


def disagree(p: float) -> float:
    """The chance that two independent runs disagree on a comparison
    that is a finding in a share p of runs."""
    return 2 * p * (1 - p)


def text(rows: list, names: list, boots: tuple, trials: int,
         seed: int, shown: float = 0.01) -> str:
    """The table: comparisons two runs disagree on with a chance of at
    least `shown` at any boot count, and the expected sum per pair."""
    head = " ".join(f"{f'P{n}':>5} {f'D{n}':>5}" for n in boots)
    # a share p from t trials is known to about sqrt(p(1-p)/t)
    lines = [f"Boots resampled from: {', '.join(names)}",
             f"{trials} simulated runs per comparison and boot count "
             f"(seed {seed}); Pn: share of runs of n boots a cell in "
             f"which it is a finding (give or take at most "
             f"{0.5 / trials ** 0.5:.3f}, one standard error); Dn: "
             f"chance two runs disagree.", "",
             f"{'cell':34} {'metric':24} {'boots':>7} {head}"]
    for r in rows:
        if max(disagree(p) for p in r["found"].values()) < shown:
            continue
        cols = " ".join(f"{p:5.2f} {disagree(p):5.2f}"
                        for p in r["found"].values())
        lines.append(f"{r['cell']:34} {r['metric']:24} "
                     f"{'/'.join(map(str, r['measured'])):>7} {cols}")
    total = {n: sum(disagree(r["found"][n]) for r in rows) for n in boots}
    lines += ["", f"{len(rows)} comparisons; disagreements a pair of runs "
              "should expect: " + ", ".join(
                  f"{total[n]:.2f} at {n} boots" for n in boots)]
    return "\n".join(lines) + "\n"
