"""Statistics of latency histograms, per cell and between variants.

Latencies come as histograms ({us: count}) from cyclictest, one per boot.
A cell (variant, scenario) pools its boots; confidence intervals come from
a bootstrap over boots (boot-to-boot spread is the lab's biggest noise);
a variant is compared with baseline by the ratio of percentiles and by a
one-sided Fisher exact test on the tail: the share of samples above the
midpoint of the two percentiles.  (A Mann-Whitney U test, used first,
compares the bulk of the distributions: a variant that moves 6% of the
samples from 5 ms to 30 us while its median rises by 2 us "loses" it.)
"""
import numpy as np
from scipy import stats as sps

QUANTILES = {"min": 0.0, "median": 0.5, "p99": 0.99, "p99.9": 0.999,
             "max": 1.0}
ALPHA = 0.01           # significance level for calling a difference
MIN_BOOTS = 2          # boot-to-boot spread is unknown from one boot
BOOTSTRAP = 2000
SEED = 20221116        # fixed: the same data gives the same report


def _arrays(hist: dict):
    keys = np.array(sorted(hist), dtype=float)
    counts = np.array([hist[k] for k in sorted(hist)], dtype=float)
    return keys, counts


def pooled(hists: list) -> dict:
    out = {}
    for h in hists:
        for k, v in h.items():
            out[k] = out.get(k, 0) + v
    return out


def quantile(hist: dict, q: float) -> float:
    """Nearest-rank quantile of a histogram (q=0: min, q=1: max)."""
    keys, counts = _arrays(hist)
    if not counts.sum():
        return float("nan")
    if q <= 0:
        return float(keys[0])
    cum = np.cumsum(counts)
    rank = np.ceil(q * cum[-1])
    return float(keys[np.searchsorted(cum, rank)])


def share_over(hist: dict, us: float) -> float:
    keys, counts = _arrays(hist)
    return float(counts[keys > us].sum() / counts.sum()) if counts.sum() \
        else float("nan")


def bootstrap_ci(hists: list, q: float, level: float = 0.95):
    """Interval of the pooled quantile when boots are resampled."""
    if len(hists) < 2:
        v = quantile(pooled(hists), q)
        return (v, v)
    keys = np.array(sorted(pooled(hists)), dtype=float)
    index = {k: i for i, k in enumerate(keys)}
    table = np.zeros((len(hists), len(keys)))
    for row, h in enumerate(hists):
        for k, v in h.items():
            table[row, index[k]] = v
    rng = np.random.default_rng(SEED)
    picks = rng.integers(0, len(hists), (BOOTSTRAP, len(hists)))
    # weights[i, b]: how often resample i drew boot b
    weights = np.zeros((BOOTSTRAP, len(hists)))
    np.add.at(weights, (np.arange(BOOTSTRAP)[:, None], picks), 1)
    values = []
    for chunk in np.array_split(weights, max(1, BOOTSTRAP // 200)):
        cum = np.cumsum(chunk @ table, axis=1)       # resamples x keys
        if q <= 0:
            first = (cum > 0).argmax(axis=1)
        else:
            rank = np.ceil(q * cum[:, -1])[:, None]
            first = (cum >= rank).argmax(axis=1)
        values.extend(keys[first])
    lo, hi = np.percentile(values, [(1 - level) / 2 * 100,
                                    (1 + level) / 2 * 100])
    return (float(lo), float(hi))


def cell(hists: list) -> dict:
    """min, median, p99, p99.9, max with 95% intervals; tail shares."""
    all_ = pooled(hists)
    out = {"boots": len(hists), "samples": int(sum(all_.values()))}
    for name, q in QUANTILES.items():
        out[name] = quantile(all_, q)
        out[name + "_ci"] = bootstrap_ci(hists, q)
    out["over_1ms"] = share_over(all_, 1000)
    out["over_100us"] = share_over(all_, 100)
    return out


def compare(variant_hists: list, base_hists: list, noise_floor_us: float,
            metric: str = "p99") -> dict:
    """variant against baseline on one metric: ratio, p-values, verdict.

    A win needs at least MIN_BOOTS boots on each side and all three: the
    one-sided Fisher exact test says fewer of the variant's samples lie
    above the midpoint of the two values (p < ALPHA), the metric's 95%
    intervals over boots do not overlap, and the difference exceeds the
    noise floor.
    """
    q = QUANTILES[metric]
    v, b = (quantile(pooled(h), q) for h in (variant_hists, base_hists))
    v_ci, b_ci = (bootstrap_ci(h, q) for h in (variant_hists, base_hists))
    mid = (v + b) / 2
    table = []
    for h in (pooled(variant_hists), pooled(base_hists)):
        n = sum(h.values())
        over = n * share_over(h, mid)
        table.append([round(over), round(n - over)])
    p_less = float(sps.fisher_exact(table, alternative="less").pvalue)
    p_greater = float(sps.fisher_exact(table, alternative="greater").pvalue)
    diff = v - b
    apart = v_ci[1] < b_ci[0] or v_ci[0] > b_ci[1]
    verdict = "no difference"
    if min(len(variant_hists), len(base_hists)) < MIN_BOOTS:
        verdict = "too few boots"
    elif apart and abs(diff) > noise_floor_us:
        if diff < 0 and p_less < ALPHA:
            verdict = "win"
        elif diff > 0 and p_greater < ALPHA:
            verdict = "loss"
    return {"metric": metric, "ratio": v / b if b else float("nan"),
            "diff_us": diff, "p_less": p_less, "p_greater": p_greater,
            "intervals_apart": bool(apart), "noise_floor_us": noise_floor_us,
            "verdict": verdict}
