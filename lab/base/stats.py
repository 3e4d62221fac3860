"""Statistics with the boot as the unit of replication.

Within one boot cyclictest's samples are not independent (a 5 ms handler
every 20 ms makes every 20th sample late, in a pattern fixed by the
phase between the two periods), so no test here treats samples as
replicates.  Each boot gives one value per metric (p99, max, share over
1 ms, missed periods, throughput...), a cell is its boots' values, and a
variant is compared with baseline on those values:

- a two-sided exact permutation test of the rank sums (Mann-Whitney with
  ties as mid-ranks, every split counted): twice the smaller one-sided
  p, below the rule's alpha; where runs are pooled (lab/analyse/pool.py),
  ranked within each run and summed over runs (stratified by run); on
  values of 0 and 1 (a boot in a tail's high mode or not) it is the
  exact test of two shares;
- the Hodges-Lehmann shift (median of all variant-minus-baseline
  differences) with its distribution-free interval (for 0/1 values the
  difference of the shares, with Newcombe's interval);
- what the rule (RULES, RULE) asks beyond the test: the metric's floor
  cleared by the shift's interval (lab/base/metrics.py, `min_effect`),
  and in the stricter rules kept for scoring a ratio of medians and the
  base's boot-to-boot spread; for a count of rare events, at least one
  median at the metric's level (`min_level`).  A significant shift that
  misses a bar is "n.s.", with the reason in `under`;
- "same" where the shift's 90% interval lies within the equivalence
  margin (two one-sided tests).

measure() computes the first two, judged() applies a rule, so that one
test can be judged under every rule (lab/analyse/calibrate.py scores
them on measured false-finding rates and sensitivity).  At least
MIN_BOOTS boots on each side, else "not enough boots"; with 5 boots
against 5 the smallest possible p is 2/252 = 0.008.  Over a report's
family of comparisons the p-values are then adjusted (bh_adjust:
Benjamini and Hochberg's false-discovery rate), and the report shows a
verdict only where q < FDR as well.  Looks (a group-sequential plan)
splits the rule's alpha between a first look at 5 boots and a second
at 10.
"""
import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from . import metrics

ALPHA = 0.01
FDR = 0.05              # Benjamini-Hochberg, over a report's family
MIN_BOOTS = 5
RATIO = 2.0
LEVEL = 0.95            # the Hodges-Lehmann interval
# "same" needs the shift's 90% interval (two one-sided tests at 5%)
# inside +-20% of the base's median, or the metric's floor where that
# is larger (for latencies 20% or 5 us): the ratio fixed before looking,
# as an equivalence test needs
EQUIVALENCE_LEVEL = 0.90
EQUIVALENCE_RATIO = 0.20


def upper_median(values) -> float:
    """The upper median of the values that are numbers (NaN: no sample
    kept), as reports print medians over boots; NaN if none."""
    v = sorted(x for x in values if x == x)
    return v[len(v) // 2] if v else float("nan")


# Histograms ({us: count}): for plots and the tracing overhead.

def pooled(hists: list) -> dict:
    out = {}
    for h in hists:
        for k, v in h.items():
            out[k] = out.get(k, 0) + v
    return out


def quantile(hist: dict, q: float) -> float:
    """Nearest-rank quantile of a histogram (q=0: min, q=1: max)."""
    keys = sorted(hist)
    total = sum(hist[k] for k in keys)
    if not total:
        return float("nan")
    rank = max(1, math.ceil(q * total))
    seen = 0
    for k in keys:
        seen += hist[k]
        if seen >= rank:
            return float(k)
    return float(keys[-1])


def share_over(hist: dict, us: float) -> float:
    total = sum(hist.values())
    return sum(v for k, v in hist.items() if k > us) / total if total \
        else float("nan")


def histogram(latencies) -> dict:
    values, counts = np.unique(np.asarray(latencies, dtype=int),
                               return_counts=True)
    return {int(v): int(c) for v, c in zip(values, counts)}


# One boot: its samples (sorted) give one value per latency metric.

def boot_values(latencies: np.ndarray, threads: dict) -> dict:
    """Per-boot latency metrics, plus samples kept and missed periods."""
    out = {m.name: m.of_samples(latencies) for m in metrics.LATENCY
           if m.of_samples}
    expected = sum(t["expected"] for t in threads.values())
    missed = sum(t["missed"] for t in threads.values())
    out["samples"] = int(len(latencies))
    out["missed"] = missed / expected if expected else float("nan")
    return with_derived(out)


def with_derived(values: dict) -> dict:
    """A boot's values with the metrics derived from them (of_boot)
    added where missing: runs stored before such a metric existed get
    it from what they kept."""
    out = dict(values)
    for m in metrics.LATENCY:
        if m.of_boot and m.name not in out:
            out[m.name] = m.of_boot(out)
    return out


# Two cells: verdicts on per-boot values.

def spread(values) -> float:
    """A cell's boot-to-boot spread: the interquartile range."""
    v = np.asarray(values, dtype=float)
    return float(np.subtract(*np.percentile(v, [75, 25]))) if len(v) \
        else float("nan")


def _rank_sum_null(x, y) -> tuple[np.ndarray, int]:
    """The null distribution of x's doubled rank sum among x and y
    (mid-ranks for ties; doubled, they are integers), as probabilities
    indexed by the sum, and the observed sum.  Every split of the ranks
    into groups of len(x) and len(y) is counted, not listed (pooled runs
    of 15 boots a side have 155 million): a subset-sum count."""
    doubled = np.rint(2 * sps.rankdata(np.concatenate([x, y]))).astype(int)
    n = len(x)
    # ways[j][s]: subsets of j of the ranks seen so far with doubled sum s
    ways = np.zeros((n + 1, int(doubled.sum()) + 1))
    ways[0][0] = 1
    for r in doubled:
        ways[1:, r:] += ways[:-1, :ways.shape[1] - r].copy()
    return ways[n] / ways[n].sum(), int(doubled[:n].sum())


def rank_test(x, y, strata=None) -> tuple[float, float]:
    """One-sided exact p-values that x tends lower / higher than y.

    The statistic is x's rank sum in the pooled sample; its null
    distribution comes from every split of the pooled ranks into groups
    of len(x) and len(y).  With `strata` (a label per value of x, and
    one per value of y: the run each boot came from), ranks are taken
    within each stratum and the statistic is the sum of the strata's
    rank sums, whose null distribution is the convolution of theirs: a
    difference between runs cannot make a difference between kernels.
    A stratum with values on one side only compares nothing.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    if strata is None:
        null, observed = _rank_sum_null(x, y)
    else:
        sx, sy = (np.asarray(s) for s in strata)
        null, observed = np.ones(1), 0
        for label in sorted(set(sx) & set(sy)):
            part, seen = _rank_sum_null(x[sx == label], y[sy == label])
            null, observed = np.convolve(null, part), observed + seen
    return (float(null[:observed + 1].sum()),
            float(null[observed:].sum()))


def _rank_test_normal(x, y) -> tuple[float, float]:
    """rank_test's two p-values from the normal approximation of the
    rank sum, with the tie correction and a continuity correction (as
    scipy's mannwhitneyu gives them, without its overhead: calibration
    asks hundreds of thousands of times)."""
    ranks = sps.rankdata(np.concatenate([x, y]))
    n, m = len(x), len(y)
    u = ranks[:n].sum() - n * (n + 1) / 2
    _, ties = np.unique(ranks, return_counts=True)
    total = n + m
    var = n * m / 12 * ((total + 1) -
                        (ties ** 3 - ties).sum() / (total * (total - 1)))
    if var <= 0:
        return 1.0, 1.0             # all tied: nothing to rank
    mid, sd = n * m / 2, math.sqrt(var)
    # P(U <= u) and P(U >= u), each with half a step of continuity
    lower = 0.5 * math.erfc(-((u - mid + 0.5) / sd) / math.sqrt(2))
    higher = 0.5 * math.erfc(((u - mid - 0.5) / sd) / math.sqrt(2))
    return min(1.0, lower), min(1.0, higher)


@functools.lru_cache(maxsize=None)
def _u_null_counts(n: int, m: int) -> np.ndarray:
    """How many splits give each Mann-Whitney U = 0..n*m (no ties); one
    table per (n, m), read only (lab/analyse/power.py asks thousands of
    times)."""
    # f[i][j][u]: arrangements of i x's and j y's with U = u
    f = [[None] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        for j in range(m + 1):
            if i == 0 or j == 0:
                f[i][j] = np.zeros(n * m + 1)
                f[i][j][0] = 1
                continue
            a = np.zeros(n * m + 1)
            a[j:] += f[i - 1][j][:n * m + 1 - j]   # largest is an x
            a += f[i][j - 1]                        # largest is a y
            f[i][j] = a
    f[n][m].flags.writeable = False
    return f[n][m]


def hodges_lehmann(x, y, level: float = LEVEL) -> tuple[float, tuple]:
    """Shift of x against y and its distribution-free interval."""
    d = np.sort(np.subtract.outer(np.asarray(x, float),
                                  np.asarray(y, float)).ravel())
    shift = float(np.median(d))
    counts = _u_null_counts(len(x), len(y))
    cdf = np.cumsum(counts) / counts.sum()
    # k: the largest with P(U <= k-1) <= (1-level)/2; interval d[k-1],
    # d[nm-k] (0-based), or the whole range when boots are too few.
    k = int(np.searchsorted(cdf, (1 - level) / 2, side="right"))
    if k < 1:
        return shift, (float(d[0]), float(d[-1]))
    return shift, (float(d[k - 1]), float(d[len(d) - k]))


@dataclass(frozen=True)
class Rule:
    """What a verdict needs beyond the test, p < alpha in both
    directions.  The rules are declared in RULES and scored by
    `python3 -m lab calibrate` on both error rates: false findings
    (relabelled boots, the A/A control) and sensitivity (known effects
    injected into real boots); RULE is the one the lab judges by
    (lab/docs/statistics.md says how it was chosen)."""
    name: str
    meaning: str
    alpha: float = ALPHA
    # medians at least this many times apart (None: no ratio bar)
    ratio: float = None
    # the shift's whole interval beyond the base's interquartile range
    spread: bool = False
    # the metric's floor cleared by the interval's end nearest to no
    # change ("interval") or by the shift itself ("shift")
    floor_by: str = "interval"

    def missed(self, m: dict, floor: float, level: float) -> list:
        """The bars a measured comparison (measure()) misses."""
        near = m["shift_interval"][0] if m["direction"] == "higher" else \
            -m["shift_interval"][1]
        size = near if self.floor_by == "interval" else abs(m["shift"])
        ratio = m["ratio"]
        return [why for why, missed in (
            ("the base's spread", self.spread and near <= m["spread"]),
            (f"the floor {floor:g}", size < floor),
            (f"{self.ratio}x", self.ratio is not None and ratio is not None
             and 1 / self.ratio < ratio < self.ratio),
            (f"the level {level:g} (too few events)",
             max(abs(x) for x in m["median"]) < level))
            if missed]


RULES = {r.name: r for r in (
    Rule("strict", "the rule of runs I-L (2026-12-06): medians 2x apart, "
         "the shift's interval beyond the base's interquartile range "
         "and the floor", ratio=RATIO, spread=True),
    Rule("no-spread", "strict without the spread bar: medians 2x apart, "
         "the shift's interval beyond the floor", ratio=RATIO),
    Rule("floor", "the shift's interval beyond the metric's floor, no "
         "ratio and no spread bar"),
    Rule("floor-shift", "the shift itself beyond the metric's floor",
         floor_by="shift"),
)}
# The rule verdicts are given by: the most sensitive of RULES whose
# measured false-finding rate is under 1% of null comparisons (runs E-L;
# lab/docs/statistics.md, "Calibration").
RULE = RULES["floor"]


@dataclass(frozen=True)
class Looks:
    """A group-sequential plan: every cell gets boots[0] boots; a
    comparison its lead and tail metrics leave unsettled there (neither
    a finding nor "same") gets boots[1] for both cells, and is judged
    again.  The false-finding rate is spent across the looks
    (Bonferroni: alpha[0] + alpha[1] = the rule's alpha), so looking
    twice finds no more false differences than one fixed look at
    alpha.  At 5 boots against 5 the smallest p is 2/252 = 0.0079, so
    alpha[0] = 0.008 lets the first look decide every separated cell."""
    boots: tuple = (5, 10)
    alpha: tuple = (0.008, 0.002)


LOOKS = Looks()


def measure(variant, base, strata: tuple = None, exact: bool = True,
            binary: bool = False) -> dict:
    """A variant's per-boot values against its base's, before any rule:
    medians, ratio, the rank test, the Hodges-Lehmann shift and its
    interval, the base's spread, the direction the test points in, and
    whether the shift is equivalent to none (equivalence); {"boots"}
    alone where either side has fewer than MIN_BOOTS.  `exact`=False:
    the rank test's normal approximation (simulations at large sizes,
    lab/analyse/calibrate.py), unstratified only.  `binary`: values of
    0 and 1 (a boot in a tail's high mode or not), whose "median" is the
    share of boots at 1 and whose shift is the difference of the two
    shares, with Newcombe's interval; the rank test on them is the
    exact test of two proportions (Fisher's, conditional on the
    margins; stratified by run, the exact Mantel-Haenszel analogue)."""
    v, b = np.asarray(variant, float), np.asarray(base, float)
    if strata is not None:
        strata = (np.asarray(strata[0])[~np.isnan(v)],
                  np.asarray(strata[1])[~np.isnan(b)])
    v, b = v[~np.isnan(v)], b[~np.isnan(b)]
    out = {"boots": [len(v), len(b)]}
    if min(len(v), len(b)) < MIN_BOOTS:
        return out
    p_lower, p_higher = rank_test(v, b, strata) if exact or strata \
        is not None else _rank_test_normal(v, b)
    if binary:
        med_v, med_b = float(v.mean()), float(b.mean())
        shift = med_v - med_b
        interval = share_difference_interval(v, b, LEVEL)
        alike = share_difference_interval(v, b, EQUIVALENCE_LEVEL)
    else:
        med_v, med_b = float(np.median(v)), float(np.median(b))
        shift, interval = hodges_lehmann(v, b)
        alike = hodges_lehmann(v, b, EQUIVALENCE_LEVEL)[1]
    direction = "lower" if shift < 0 and p_lower < p_higher else \
        "higher" if shift > 0 and p_higher < p_lower else ""
    if binary:
        out["binary"] = True
    return dict(out, median=[med_v, med_b],
                ratio=med_v / med_b if med_b else None, shift=shift,
                shift_interval=interval, spread=0.0 if binary else spread(b),
                p_lower=p_lower, p_higher=p_higher,
                p=min(1.0, 2 * min(p_lower, p_higher)), direction=direction,
                equivalence=list(alike))


def share_difference_interval(x, y, level: float) -> tuple:
    """Newcombe's interval (his method 10, from two Wilson score
    intervals) for the difference of two shares of 0/1 values."""
    z = sps.norm.ppf(1 - (1 - level) / 2)

    def wilson(values):
        n, p = len(values), float(np.mean(values))
        mid = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / \
            (1 + z * z / n)
        return p, mid - half, mid + half
    p1, l1, u1 = wilson(x)
    p2, l2, u2 = wilson(y)
    d = p1 - p2
    return (d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2),
            d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2))


def judged(m: dict, better: str = "lower", floor: float = 0.0,
           level: float = 0.0, rule: Rule = None) -> dict:
    """The verdict on a measured comparison (measure()) under `rule`
    (RULE by default): "lower", "higher" (than the base), "n.s." or
    "not enough boots".  A significant shift that misses a bar is
    "n.s." with `under` (the bars it missed) and `direction`.  `same`:
    whether the shift is shown to lie within the equivalence margin
    (`margin`), whatever the verdict."""
    rule = rule or RULE
    out = dict(m, better=better)
    if "p" not in m:
        return dict(out, verdict="not enough boots")
    out.pop("direction")
    out["margin"] = max(EQUIVALENCE_RATIO * abs(m["median"][1]), floor)
    lo, hi = m["equivalence"]
    out["same"] = -out["margin"] < lo and hi < out["margin"]
    verdict = "n.s."
    if m["p"] < rule.alpha and m["direction"]:
        under = rule.missed(m, floor, level)
        if under:       # significant, too small to count: said, not shown
            out["under"] = ", ".join(under)
            out["direction"] = m["direction"]
        else:
            verdict = m["direction"]
    return dict(out, verdict=verdict)


def compare(variant: list, base: list, better: str = "lower",
            floor: float = 0.0, level: float = 0.0,
            strata: tuple = None, rule: Rule = None,
            binary: bool = False) -> dict:
    """A variant's per-boot values against its base's: test and verdict.

    Whether lower is good is the metric's own (better).  `floor`: the
    smallest shift that counts (the metric's min_effect); `level`: the
    median one side must reach for a count to be judged; `strata`: the
    run each value came from, variant's and base's, where runs are
    pooled (the test is then stratified by run, rank_test).  ratio is
    None where the base's median is 0.
    """
    return judged(measure(variant, base, strata, binary=binary), better,
                  floor, level, rule)


def bh_adjust(ps: list) -> list:
    """Benjamini-Hochberg q-values of p-values, in their order: the
    smallest false-discovery rate at which each would be rejected."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    q, running = [0.0] * m, 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, ps[i] * m / rank)
        q[i] = min(1.0, running)
    return q


def fmt_p(p: float) -> str:
    """p-values as a reader on the list expects them: never 'p=0'."""
    if p < 0.001:
        return "p < 0.001"
    return f"p = {p:.3f}" if p < 0.01 else f"p = {p:.2f}"
