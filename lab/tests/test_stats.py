"""Statistics on per-boot values whose answers are known."""
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from lab.analyse import cyclictest
from lab.base import metrics, stats
from lab.base.log import LabError

BASE = [4800, 4700, 4900, 4850, 4750]          # p99 per boot, us
BETTER = [50, 60, 40, 55, 45]


def test_quantiles_of_a_known_histogram():
    h = {10: 50, 20: 40, 30: 9, 40: 1}          # 100 samples
    assert stats.quantile(h, 0) == 10
    assert stats.quantile(h, 0.5) == 10          # rank 50 -> 10
    assert stats.quantile(h, 0.51) == 20
    assert stats.quantile(h, 0.99) == 30         # rank 99 -> 30
    assert stats.quantile(h, 1) == 40
    assert stats.share_over(h, 25) == pytest.approx(0.10)


def test_pooling_adds_counts():
    assert stats.pooled([{1: 2, 3: 4}, {3: 1, 5: 1}]) == {1: 2, 3: 5, 5: 1}


def test_boot_values_from_samples():
    lat = np.sort(np.array([10.0] * 980 + [2000.0] * 20))
    threads = {0: {"expected": 1250, "missed": 250}}
    v = stats.boot_values(lat, threads)
    assert v["p50"] == 10 and v["p99"] == 2000 and v["max"] == 2000
    # 1000 samples: too few for p99.9 (lab/base/metrics.py, MIN_BEYOND)
    assert v["p99.9"] != v["p99.9"] and v["over_1ms"] == pytest.approx(0.02)
    assert v["samples"] == 1000 and v["missed"] == pytest.approx(0.2)


def test_a_true_shift_is_found():
    r = stats.compare(BETTER, BASE)
    assert r["verdict"] == "lower"
    assert r["p_lower"] == pytest.approx(1 / 252)   # complete separation
    assert r["ratio"] < 0.02 and r["shift"] == -4750
    lo, hi = r["shift_interval"]
    assert lo <= r["shift"] <= hi < 0
    assert stats.compare(BASE, BETTER)["verdict"] == "higher"


def test_a_phase_only_difference_is_not_called():
    """long-irq-poll: p99 is fixed per boot by the phase between the 20 ms
    period and the 1 ms interval; with a random phase per boot both cells
    draw from the same few values."""
    phases = [4603, 4885, 4603, 4744, 4885]
    other = [4885, 4603, 4744, 4603, 4603]
    r = stats.compare(other, phases)
    assert r["verdict"] == "n.s." and 0.8 < r["ratio"] < 1.25


def test_fewer_than_five_boots_give_no_verdict():
    r = stats.compare(BETTER[:4], BASE)
    assert r["verdict"] == "not enough boots" and r["boots"] == [4, 5]
    assert stats.compare(BETTER, BASE[:2])["verdict"] == "not enough boots"


def test_a_one_boot_outlier_does_not_flip_a_verdict():
    # one variant boot as bad as the worst baseline: not "higher"
    outlier = BETTER[:4] + [9000]
    assert stats.compare(outlier, BASE)["verdict"] in ("lower", "n.s.")
    # with 9 boots a side, the true shift survives one outlier (with 8,
    # two-sided p = 0.0104 just misses 0.01)
    base9 = BASE + [4820, 4780, 4810, 4790]
    better9 = BETTER + [52, 48, 9000, 50]
    assert stats.compare(better9, base9)["verdict"] == "lower"
    # and one outlier in equal cells creates no verdict
    same = [100, 102, 98, 101, 99]
    assert stats.compare(same[:4] + [5000], same)["verdict"] == "n.s."


def test_a_shift_within_the_spread_is_not_a_verdict():
    base = [100, 400, 1000, 2500, 5000]
    var = [60, 250, 600, 1500, 3000]           # 1.6x lower, wide spread
    r = stats.compare(var, base)
    assert r["verdict"] == "n.s." and abs(r["shift"]) < r["spread"]


def test_a_wide_variant_far_from_a_tight_base_is_a_verdict():
    # preempt-rt-6.12's deferred wait in all-busy: 5-37 ms in every
    # boot against mainline's 27-47 us; the variant's own spread is wider
    # than the shift, the base's is not
    base = [37, 47, 27, 47, 47]
    var = [36516, 32111, 5121, 10452, 37429]
    r = stats.compare(var, base)
    assert r["verdict"] == "higher" and r["spread"] == 10


def test_higher_is_better_for_throughput():
    r = stats.compare([50, 51, 49, 50, 52], [100, 101, 99, 98, 102],
                      better="higher")
    assert r["verdict"] == "lower" and r["better"] == "higher"


def test_hodges_lehmann_interval_matches_the_exact_distribution():
    counts = stats._u_null_counts(5, 5)
    assert counts.sum() == math.comb(10, 5)
    assert list(counts[:6]) == [1, 1, 2, 3, 5, 7]
    shift, (lo, hi) = stats.hodges_lehmann([1, 2, 3, 4, 5],
                                           [11, 12, 13, 14, 15])
    assert shift == -10 and lo == -13 and hi == -7


def test_p_values_never_print_as_zero():
    assert stats.fmt_p(0.0) == "p < 0.001"
    assert stats.fmt_p(0.004) == "p = 0.004"
    assert stats.fmt_p(0.3) == "p = 0.30"


def test_missed_periods_from_a_run_with_known_gaps(tmp_path: Path):
    """Thread 0 at 1000 us: every 16th sample 5000 us late, so cyclictest
    skipped 5 periods after each; thread 1 at 1500 us never late.  The
    first 30 and 25 printed samples came before the threads were set
    free."""
    lines = ["Thread 0 Interval: 1000", "Thread 1 Interval: 1500",
             "WARN: stat /dev/cpu_dma_latency failed: No such file"]
    lines += [f"{0:8d}:{i:8d}:{5000 if i % 16 == 0 else 20:8d}"
              for i in range(1600)]
    lines += [f"{1:8d}:{i:8d}:{30:8d}" for i in range(1333)]
    (tmp_path / "ct.out").write_text("\n".join(lines) + "\n")
    (tmp_path / "start.txt").write_text("0 30\n1 25\n")
    ct = {"thread": {"0": {"cycles": 1600}, "1": {"cycles": 1333}}}
    m = cyclictest.measured(tmp_path / "ct.out", tmp_path / "start.txt", ct)
    t0, t1 = m["threads"][0], m["threads"][1]
    # dropped: the start count plus 50 ms of samples
    assert t0["dropped"] == 30 + 50 and t1["dropped"] == 25 + 33
    late = sum(1 for i in range(80, 1600) if i % 16 == 0)
    assert (t0["missed"], t0["expected"]) == (5 * late, 1520 + 5 * late)
    assert (t1["missed"], t1["expected"]) == (0, 1333 - 58)
    assert t0["after_start"] == 1570 and t0["cycles"] == 1600
    assert len(m["latencies"]) == 1600 - 80 + 1333 - 58
    v = stats.boot_values(m["latencies"], m["threads"])
    assert v["missed"] == pytest.approx(5 * late / (1520 + 5 * late +
                                                    1333 - 58))


def test_a_significant_shift_under_the_ratio_is_no_finding_under_strict():
    """1.6x, beyond the spread and significant, is no finding at 2x (the
    rule of runs I-L, kept as `strict` to be scored); the lab's rule
    finds it."""
    strict = stats.RULES["strict"]
    base = [100, 101, 99, 100, 102]
    c = stats.compare([160, 161, 159, 160, 162], base, rule=strict)
    assert c["verdict"] == "n.s." and c["under"] == "2.0x"
    assert stats.compare([210, 211, 209, 210, 212], base,
                         rule=strict)["verdict"] == "higher"
    assert stats.compare([160, 161, 159, 160, 162], base,
                         rule=stats.RULES["floor"])["verdict"] == "higher"

    base = [100, 101, 99, 100, 102]
    var = [80, 81, 79, 80, 82]                 # 0.8x, far beyond spread
    c = stats.compare(var, base, rule=strict)
    assert c["verdict"] == "n.s." and c["p"] < stats.ALPHA
    assert (c["direction"], c["under"]) == ("lower", "2.0x")
    from lab.report import text as report_text
    assert report_text._verdict_word(dict(c, shown="n.s."), detail=True) == \
        "n.s. (lower x0.80, under 2.0x)"


def test_a_shift_under_the_metrics_floor_gets_no_verdict():
    """revert-ksoftirqd's long-net-rx softirq_wait_max_us once read
    "small lower" on a 0.07 us shift against about 27.6 us."""
    base = [27.60, 27.61, 27.62, 27.63, 27.64]
    var = [v / 2 for v in base]                # 0.5x, but only 13.8 us
    assert stats.compare(var, base, floor=20.0)["verdict"] == "n.s."
    assert "the floor 20" in stats.compare(var, base, floor=20.0)["under"]
    assert stats.compare(var, base, floor=5.0)["verdict"] == "lower"
    # the floor each metric declares
    assert metrics.get("p99").min_effect == 5.0
    assert metrics.get("nic_app_kpps").min_effect == 0.5


def test_a_shift_whose_interval_reaches_a_bar_gets_no_verdict():
    """Both from published runs: zijlstra's attribution printed
    long-net-rx's longest wait "higher x13" with two of five boots
    0.03-0.27 us above a base with no spread, and run G printed
    stultz-v5's UDP loss "higher" on a shift whose interval reached
    down to 3.2 points, under the 5-point floor; neither repeated."""
    base = [27.74, 27.68, 27.74, 27.74, 27.74]
    var = [369.0, 28.01, 393.52, 27.77, 1192.49]
    c = stats.compare(var, base, floor=5.0)
    assert c["p"] < stats.ALPHA and c["ratio"] > stats.RATIO
    assert c["verdict"] == "n.s." and "the floor 5" in c["under"]
    # the same boots, each clear of the floor, are a finding
    clear = stats.compare([v + 40 for v in var], base, floor=5.0)
    assert clear["verdict"] == "higher"
    loss_base = [7.15, 4.56, 4.58, 5.00, 9.06]
    loss = [12.25, 13.25, 13.63, 10.76, 11.80]
    c = stats.compare(loss, loss_base, floor=5.0)
    assert c["shift"] > 5.0 and c["shift_interval"][0] < 5.0
    assert c["verdict"] == "n.s." and "the floor 5" in c["under"]


def test_a_zero_base_gives_a_difference_never_a_ratio():
    base = [0, 0, 0, 0, 0]
    var = [3, 4, 3, 5, 4]
    c = stats.compare(var, base, "lower", floor=0.5)
    assert c["ratio"] is None and c["verdict"] == "higher"
    from lab.report import text as report_text
    assert report_text.effect(c) == "+4 (base 0)"
    assert stats.compare(var, base, "lower", floor=10)["verdict"] == "n.s."


def test_a_count_of_rare_events_under_its_level_gets_no_verdict():
    """Runs E and F of the default matrix disagreed on handler runs over
    an RT task: stultz-v5 0 in every boot against 3-7 of about 515
    triggers (0.6-1.3%), decided by one boot or a gate."""
    base, var = [0.78, 0.97, 1.17, 1.36, 1.56], [0.0] * 5
    m = metrics.get("softirq_over_rt_percent")
    c = stats.compare(var, base, m.better, m.min_effect, m.min_level)
    assert c["verdict"] == "n.s." and "too few events" in c["under"]
    # the same separation on counts of 10 events or more is judged
    c = stats.compare(var, [v * 3 for v in base], m.better, m.min_effect,
                      m.min_level)
    assert c["verdict"] == "lower"
    # only counts declare a level: latencies are judged at any size
    assert metrics.get("p99").min_level == 0


def test_predictions_read_no_difference_as_no_proof():
    from lab.base import predictions
    assert predictions.outcome("lower", "lower") == "confirmed"
    assert predictions.outcome("same", "higher") == "refuted"
    assert predictions.outcome("lower", "n.s.") == "not shown"
    assert predictions.outcome("same", "n.s.") == "consistent"
    assert predictions.outcome("lower", "withheld") == "untested"


def test_a_second_prediction_for_one_cell_is_refused(tmp_path: Path):
    from lab.base import predictions
    f = tmp_path / "predictions.txt"
    f.write_text("idle a p99 same why\nidle b p99 same why\n")
    assert len(predictions.load(f)) == 2
    f.write_text("idle a p99 same why\nidle a max lower why\n")
    with pytest.raises(LabError, match=r"predictions.txt:2: a second "
                       r"prediction for idle on a"):
        predictions.load(f)


def test_intervals_as_cyclictest_prints_them(tmp_path: Path):
    """cyclictest 2.4 prints "Thread N Interval:" after adding -d for the
    next thread, so without -h each printed interval is one distance too
    long (seen: -t 2 -i 1000 -d 500 printed 1500 and 2000 and took 988
    and 661 samples in 1 s); with -h every thread has -i."""
    assert cyclictest.interval_shift(
        "cyclictest -t 2 -p 99 -i 1000 -d 500 -m -q -v -u -D 60") == 500
    assert cyclictest.interval_shift("cyclictest -t 1 -i 1000 -D 10") == 500
    assert cyclictest.interval_shift("cyclictest -t 2 -d0 -D 10") == 0
    assert cyclictest.interval_shift(
        "cyclictest -t 2 --distance=250 -D 10") == 250
    assert cyclictest.interval_shift(
        "cyclictest -t 1 -i 1000 -D 10 -h 20000") == 0
    assert cyclictest.interval_shift("") == 0
    lines = ["Thread 0 Interval: 1500", "Thread 1 Interval: 2000"]
    lines += [f"{t:8d}:{i:8d}:{1600:8d}" for t in (0, 1) for i in range(100)]
    (tmp_path / "ct.out").write_text("\n".join(lines) + "\n")
    ct = {"cmdline:": "cyclictest -t 2 -p 99 -i 1000 -d 500 -v -D 1",
          "thread": {"0": {"cycles": 100}, "1": {"cycles": 100}}}
    m = cyclictest.measured(tmp_path / "ct.out", tmp_path / "start.txt", ct)
    assert [m["threads"][t]["interval_us"] for t in (0, 1)] == [1000, 1500]
    # 1600 us late: each kept sample skipped one period at 1000 us and
    # one at 1500 us (of 100 printed, 50 ms of samples are dropped)
    assert [(m["threads"][t]["kept"], m["threads"][t]["missed"])
            for t in (0, 1)] == [(50, 50), (67, 67)]


def test_the_test_is_two_sided_at_its_stated_level():
    """Complete separation of 5 boots against 5: one-sided 1/252 each
    way, so two-sided 2/252, under 0.01; 4 boots against 4 cannot reach
    it (2/70 = 0.029)."""
    r = stats.compare(BETTER, BASE)
    assert r["p"] == pytest.approx(2 / 252) and r["verdict"] == "lower"
    r = stats.compare(BETTER[:4], BASE[:4])
    assert r["verdict"] == "not enough boots"
    short = stats.rank_test(BETTER[:4], BASE[:4])
    assert 2 * min(short) == pytest.approx(2 / 70)


def test_the_rank_test_is_exact_with_ties_and_at_pooled_sizes():
    """Against every split listed, with mid-ranks for ties; and 15 boots
    against 15 (155 million splits): complete separation is one split."""
    x, y = [3, 1, 4, 1, 5], [9, 2, 6, 5, 3, 5]
    ranks = sps.rankdata(x + y)
    sums = [sum(ranks[list(c)]) for c in itertools.combinations(
        range(len(ranks)), len(x))]
    observed = sum(ranks[:len(x)])
    lower, higher = stats.rank_test(x, y)
    assert lower == pytest.approx(np.mean([s <= observed for s in sums]))
    assert higher == pytest.approx(np.mean([s >= observed for s in sums]))
    lower, higher = stats.rank_test(list(range(15)), list(range(15, 30)))
    assert lower == pytest.approx(1 / math.comb(30, 15)) and higher == 1.0


def test_the_rank_test_stratified_by_run():
    """Lower within each of two runs whose levels differ by 100: each
    run's split is 1 of 20, both together 1 of 400; unstratified, the
    runs' difference hides it.  With ties, against every split listed
    run by run."""
    x, y = [1, 2, 3, 101, 102, 103], [4, 5, 6, 104, 105, 106]
    runs = (["a"] * 3 + ["b"] * 3, ["a"] * 3 + ["b"] * 3)
    lower, _ = stats.rank_test(x, y, runs)
    assert lower == pytest.approx(1 / 400)
    assert stats.rank_test(x, y)[0] > 0.05
    x, y = [3, 1, 4, 1, 5, 9], [2, 6, 5, 3, 5, 8]
    labels = ["a", "a", "a", "b", "b", "b"]
    sums = {}
    for run in "ab":
        xs = [v for v, s in zip(x, labels) if s == run]
        ys = [v for v, s in zip(y, labels) if s == run]
        ranks = sps.rankdata(xs + ys)
        sums[run] = [sum(ranks[list(c)]) for c in itertools.combinations(
            range(len(ranks)), len(xs))]
        sums[run + "obs"] = sum(ranks[:len(xs)])
    total = [p + q for p in sums["a"] for q in sums["b"]]
    observed = sums["aobs"] + sums["bobs"]
    lower, higher = stats.rank_test(x, y, (labels, labels))
    assert lower == pytest.approx(np.mean([t <= observed for t in total]))
    assert higher == pytest.approx(np.mean([t >= observed for t in total]))


def test_benjamini_hochberg_against_a_hand_computed_example():
    """p = 0.01, 0.04, 0.03, 0.005 (m = 4): sorted 0.005, 0.01, 0.03,
    0.04 give p*m/rank 0.02, 0.02, 0.04, 0.04, already monotone."""
    q = stats.bh_adjust([0.01, 0.04, 0.03, 0.005])
    assert q == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # a step-up: the larger p's bound carries down to a smaller one
    assert stats.bh_adjust([0.02, 0.021]) == pytest.approx([0.021, 0.021])
    assert stats.bh_adjust([]) == []


def test_an_unresolved_comparison_scores_its_prediction_on_a_null_test():
    from lab.analyse import analysis
    from lab.base import predictions
    declared = {"verdict": "n.s.", "unresolved": "flips", "p": 0.4}
    declared["shown"] = analysis.shown_verdict(declared, "")
    assert declared["shown"] == "unresolved"
    # nothing found: the prediction is not shown, as for any n.s.
    assert predictions.outcome("lower", analysis._tested(declared)) == \
        "not shown"
    found = dict(declared, verdict="lower")
    assert predictions.outcome("lower", analysis._tested(found)) == \
        "unresolved"
    # too few boots says so, declared or not
    few = {"verdict": "not enough boots", "unresolved": "flips"}
    assert analysis.shown_verdict(few, "") == "not enough boots"
