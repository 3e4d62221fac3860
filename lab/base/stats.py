"""Statistics with the boot as the unit of replication.

Within one boot cyclictest's samples are not independent (a 5 ms handler
every 20 ms makes every 20th sample late, in a pattern fixed by the
phase between the two periods), so no test here treats samples as
replicates.  Each boot gives one value per metric (p99, max, share over
1 ms, missed periods, throughput...), a cell is its boots' values, and a
variant is compared with baseline on those values:

- a two-sided exact permutation test of the rank sums (Mann-Whitney with
  ties as mid-ranks, every split counted): twice the smaller one-sided
  p, below ALPHA; where runs are pooled (lab/analyse/pool.py), ranked
  within each run and summed over runs (stratified by run);
- the Hodges-Lehmann shift (median of all variant-minus-baseline
  differences) with its distribution-free interval;
- a practical effect: the medians differ by at least RATIO times (where
  the base's median is 0, no ratio: the difference must pass the floor),
  and the whole interval of the shift, not only the shift, lies beyond
  the base cell's boot-to-boot spread (its interquartile range: the
  noise of the reference; a variant whose own boots scatter widely far
  above a tight base still differs) and the metric's floor
  (lab/base/metrics.py, `min_effect`); for a
  count of rare events, at least one median at the metric's level
  (`min_level`: enough events for a verdict).  A significant shift that
  misses any of these is "n.s.", with the reason in `under`.

All three must hold, with at least MIN_BOOTS boots on each side; with
fewer the verdict is "not enough boots".  With 5 boots against 5 the
smallest possible p is 2/252 = 0.008.  Over a report's family of
comparisons the p-values are then adjusted (bh_adjust: Benjamini and
Hochberg's false-discovery rate), and the report shows a verdict only
where q < FDR as well.
"""
import functools
import math

import numpy as np
from scipy import stats as sps

from . import metrics

ALPHA = 0.01
FDR = 0.05              # Benjamini-Hochberg, over a report's family
MIN_BOOTS = 5
RATIO = 2.0
LEVEL = 0.95            # the Hodges-Lehmann interval


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


def compare(variant: list, base: list, better: str = "lower",
            floor: float = 0.0, level: float = 0.0,
            strata: tuple = None) -> dict:
    """A variant's per-boot values against baseline's: test and verdict.

    verdict: "lower", "higher" (than baseline), "n.s." or "not enough
    boots"; whether lower is good is the metric's own (better).  `floor`:
    the smallest shift that counts (the metric's min_effect); `level`:
    the median one side must reach for a count to be judged; `strata`:
    the run each value came from, variant's and base's, where runs are
    pooled (the test is then stratified by run, rank_test).  A
    significant shift too small to count is "n.s." with `direction` and
    `under`, the bounds it missed.  ratio is None where the base's median is 0.
    """
    v, b = np.asarray(variant, float), np.asarray(base, float)
    if strata is not None:
        strata = (np.asarray(strata[0])[~np.isnan(v)],
                  np.asarray(strata[1])[~np.isnan(b)])
    v, b = v[~np.isnan(v)], b[~np.isnan(b)]
    out = {"boots": [len(v), len(b)], "better": better}
    if min(len(v), len(b)) < MIN_BOOTS:
        return dict(out, verdict="not enough boots")
    med_v, med_b = float(np.median(v)), float(np.median(b))
    ratio = med_v / med_b if med_b else None
    p_lower, p_higher = rank_test(v, b, strata)
    p = min(1.0, 2 * min(p_lower, p_higher))
    shift, interval = hodges_lehmann(v, b)
    noise = spread(b)
    direction = "lower" if shift < 0 and p_lower < p_higher else \
        "higher" if shift > 0 and p_higher < p_lower else ""
    # the interval's end nearest to no change, as a size in the
    # direction: the spread and the floor are cleared by the whole
    # interval, not by its middle (a shift near a bar is otherwise a
    # coin toss between two runs, lab/docs/statistics.md)
    near = interval[0] if direction == "higher" else -interval[1]
    under = [why for why, missed in (
        ("the base's spread", near <= noise),
        (f"the floor {floor:g}", near < floor),
        (f"{RATIO}x", ratio is not None and 1 / RATIO < ratio < RATIO),
        (f"the level {level:g} (too few events)",
         max(abs(med_v), abs(med_b)) < level))
        if missed]
    verdict = "n.s."
    if p < ALPHA and direction:
        if under:       # significant, too small to count: said, not shown
            out["under"] = ", ".join(under)
            out["direction"] = direction
        else:
            verdict = direction
    return dict(out, median=[med_v, med_b], ratio=ratio, shift=shift,
                shift_interval=interval, spread=noise, p_lower=p_lower,
                p_higher=p_higher, p=p, verdict=verdict)


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
