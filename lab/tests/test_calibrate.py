"""The rule's error rates: relabelled boots where the answer is "no
difference", injected effects where it is "this much", the two-mode tail
test and the words for no finding (lab/analyse/calibrate.py,
lab/base/stats.py, lab/report/answer.py)."""
import math

import numpy as np

from lab.analyse import calibrate
from lab.base import metrics, stats
from lab.report import answer


def _binomial_se(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n)


def synthetic_runs(draw, runs=7, boots=5, cells=("s/a", "s/b")) -> dict:
    """{cell: {"p99": {run: values}}} from one distribution per cell."""
    return {cell: {"p99": {f"r{k}": list(draw(boots)) for k in range(runs)}}
            for cell in cells}


def test_relabelled_false_findings_are_the_tests_level_on_a_null():
    """Continuous values from one distribution, no bar that could stop a
    finding (a floor of 0 us is below any shift): with 5 boots against 5
    the rank test finds a difference when the two labels separate
    completely, 2 of 252 splits, so the relabelled rate must be
    2/252 = 0.79% within sampling error; the strict rule's bars can only
    lower it."""
    rng = np.random.default_rng(7)
    by_run = synthetic_runs(lambda n: rng.lognormal(5, 0.5, n) * 1000,
                            cells=[f"s/c{i}" for i in range(6)])
    got = calibrate.relabelled(by_run, 2, 400, np.random.default_rng(1))
    found, tested = got["floor"]
    rate = found / tested
    assert tested == 6 * 400
    assert abs(rate - 2 / 252) < 4 * _binomial_se(2 / 252, tested), rate
    assert got["strict"][0] <= found


def test_relabelled_pooled_runs_are_split_within_each_run():
    """A run effect (each run's boots shifted by their own amount) must
    not become a finding: the labels are split within every run and
    the test is stratified by run, so the rate stays at the level."""
    rng = np.random.default_rng(3)
    by_run = {"s/a": {"p99": {f"r{k}": list(rng.normal(100 + 80 * k, 3, 5))
                              for k in range(7)}}}
    found, tested = calibrate.relabelled(by_run, 0, 300,
                                         np.random.default_rng(2))["floor"]
    assert tested == 300 and found / tested < 0.03


def test_an_injected_change_is_found_at_the_rate_fresh_runs_find_it():
    """calibrate.injected says how often a change of x0.85 is found at 5
    boots; fresh simulated runs of the same population with the change
    made for real must find it as often, within sampling error."""
    rng = np.random.default_rng(11)
    population = lambda n: rng.normal(1000, 60, n)        # noqa: E731
    measured = {"s/base": {"p99": {"r0": list(population(400))}}}
    rows = calibrate.injected(measured, {"base": "base"}, {"s": ["p99"]},
                              400, np.random.default_rng(5), sizes=(5,),
                              ratios=(0.85,))
    claimed = rows[0]["rate"]["floor"][5][0.85]
    fresh = sum(stats.compare(population(5) * 0.85, population(5),
                              floor=5.0, rule=stats.RULES["floor"])
                ["verdict"] == "lower" for _ in range(400)) / 400
    se = _binomial_se(claimed, 400) + _binomial_se(fresh, 400)
    assert 0.2 < claimed < 0.95 and abs(claimed - fresh) < 3 * se, \
        (claimed, fresh)


def test_detectable_is_the_smallest_change_found_from_there_on():
    rates = {0.95: 0.1, 0.9: 0.5, 0.8: 0.85, 0.7: 0.97, 0.5: 1.0}
    assert calibrate.detectable(rates, 0.8) == 0.8
    assert calibrate.detectable(rates, 0.95) == 0.7
    # a dip further out makes the nearer change not "found from there on"
    assert calibrate.detectable({0.9: 0.9, 0.8: 0.7, 0.5: 0.9}, 0.8) == 0.5
    assert calibrate.detectable({0.9: 0.1, 0.5: 0.2}, 0.8) is None


def test_a_removed_high_mode_is_found_where_a_location_bar_misses_it():
    """Filesystem noise on 6.1: a boot's p99 is near 70 us or near 900 us;
    a kernel that removes the high mode (every boot near 80 us) sits
    between the base's two modes, where a test of location sees nothing,
    but the count of boots in the high mode (an exact test over boots)
    sees it."""
    base = [70, 900, 880, 75, 910, 890, 72, 905, 870, 68] * 2
    variant = [80, 82, 79, 85, 81, 83, 80, 84, 78, 82] * 2
    strict = stats.RULES["strict"]
    p99 = stats.compare(variant, base, floor=5.0, rule=strict)
    assert p99["verdict"] == "n.s." and p99["p"] > 0.01
    m = metrics.get("p99_over_200us")
    high = [m.of_boot({"p99": x}) for x in base]
    low = [m.of_boot({"p99": x}) for x in variant]
    tail = stats.compare(low, high, floor=m.min_effect, rule=strict,
                         binary=True)
    assert tail["verdict"] == "lower"
    assert tail["median"] == [0.0, 0.6] and tail["shift"] == -0.6
    lo, hi = tail["shift_interval"]
    assert -0.85 < lo < -0.6 < hi < -0.3
    # the same mode in both: nothing found, and no crash on all-equal
    same = stats.compare(high, high, floor=m.min_effect, binary=True)
    assert same["verdict"] == "n.s."


def test_a_boot_without_a_p99_has_no_mode():
    m = metrics.get("p99_over_200us")
    assert math.isnan(m.of_boot({"p99": float("nan")}))
    assert stats.with_derived({"p99": 300.0})["p99_over_200us"] == 1.0


def test_no_finding_reads_same_only_inside_the_margin():
    """"same" needs the shift's 90% interval inside 20% of the base's
    median; otherwise the words give the interval, never "no change"."""
    base = [1000, 1010, 990, 1005, 995, 1002, 998]
    tight = stats.compare([1001, 1008, 992, 1003, 997, 1000, 999], base,
                          floor=5.0)
    assert tight["verdict"] == "n.s." and tight["same"]
    assert answer.no_finding(tight) == "same (within 20%)"
    wide = stats.compare([100, 1900, 400, 2200, 1000, 700, 1600], base,
                         floor=5.0)
    assert wide["verdict"] == "n.s." and not wide["same"]
    lo, hi = wide["shift_interval"]
    assert answer.no_finding(wide) == \
        f"unresolved, shift {lo:+.3g} us to {hi:+.3g} us"
    assert answer.no_finding(wide).startswith("unresolved, shift -")


def test_the_controls_boot_as_their_base_and_explain_nothing_of_their_own():
    """baseline-aa and baseline-4ms boot baseline's kernel; their first
    boot runs no trace, rtla or probe phase (baseline's explains them);
    baseline-4ms's handlers are 0.8 of the scenario's, nothing else."""
    from lab.base import variants
    from lab.run import matrix, scenario
    aa, known, base = (variants.select(n)[0] for n in
                       ("baseline-aa", "baseline-4ms", "baseline"))
    assert aa.kernel_variant().name == known.kernel_variant().name == \
        "baseline"
    assert aa.is_aa_control and not known.is_aa_control
    long = scenario.select("long-block")[0]
    assert matrix.Cell(base, long, 1).explained
    assert not matrix.Cell(aa, long, 1).explained
    env = matrix.Cell(known, long, 2).plan_env()
    assert env["MODULE_ARGS"] == long.module.replace("spin_us=5000",
                                                     "spin_us=4000")
    assert matrix.Cell(aa, long, 2, seed=7).plan_env() == \
        matrix.Cell(base, long, 2, seed=7).plan_env()


def test_a_rare_high_mode_is_still_calibrated_and_a_never_found_change_reads_dash():
    """A share of boots in a tail's high mode under a half has a median
    of 0, yet the injection still asks how often its removal is found;
    a metric no ratio makes findable counts as the worst in the summary
    and reads "-", not "x0"."""
    rng = np.random.default_rng(5)
    rare = {"s/base": {"p99_over_200us": {
        "r0": list((rng.random(60) < 0.3).astype(float))}}}
    rows = calibrate.injected(rare, {"base": "base"},
                              {"s": ("p99_over_200us",)}, 20,
                              np.random.default_rng(1), sizes=(5,),
                              ratios=(0.5,))
    assert [r["metric"] for r in rows] == ["p99_over_200us"]
    never = {"injected": [{"rate": {"floor": {5: {0.5: 0.0, 0.1: 0.0}}}}]}
    assert calibrate.summary(never, "floor", 5) == "-"


def test_a_calibration_folder_is_written_whole(tmp_path, monkeypatch,
                                               capsys):
    """`calibrate --name` replaces its folder whole (issue 53): nothing
    of an earlier write is left beside the new one."""
    from lab.__main__ import main
    from lab.report import publish
    out = tmp_path / "2026-01-01-cal"
    (out / "data").mkdir(parents=True)
    (out / "data" / "calibration.json").write_text("{}")    # an earlier one
    (out / "stale.md").write_text("an earlier write\n")
    monkeypatch.setattr(publish, "default_folder", lambda name: out)
    assert main(["calibrate", "2026-12-07-known-effect-10boots",
                 "--trials", "2", "--name", "cal"]) == 0
    assert sorted(p.name for p in out.rglob("*")) == [
        "README.md", "calibration.json", "data"]
    assert "Calibration" in capsys.readouterr().out
    # a report of another kind in its place is not replaced
    other = tmp_path / "2026-01-01-report"
    (other / "data").mkdir(parents=True)
    (other / "data" / "analysis.json").write_text("{}")
    monkeypatch.setattr(publish, "default_folder", lambda name: other)
    assert main(["calibrate", "2026-12-07-known-effect-10boots",
                 "--trials", "2", "--name", "cal"]) == 2
    assert (other / "data" / "analysis.json").read_text() == "{}"
