"""Statistics against inputs whose answers are known."""
import math

import pytest

from lab import stats


def uniform(lo, hi, each=10):
    return {us: each for us in range(lo, hi + 1)}


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


def test_cell_has_every_quantile_and_an_interval_around_it():
    boots = [uniform(10, 100), uniform(12, 110), uniform(8, 95)]
    c = stats.cell(boots)
    assert c["boots"] == 3 and c["samples"] == sum(
        sum(b.values()) for b in boots)
    for name in stats.QUANTILES:
        lo, hi = c[name + "_ci"]
        assert lo <= c[name] <= hi or math.isclose(lo, hi)
    assert c["min"] == 8 and c["max"] == 110


def test_one_boot_gives_a_point_interval():
    c = stats.cell([uniform(10, 20)])
    assert c["p99_ci"] == (c["p99"], c["p99"])


def test_clear_win_is_called_a_win():
    base = [uniform(1000, 5000), uniform(1100, 5200)]
    better = [uniform(50, 300), uniform(60, 320)]
    r = stats.compare(better, base, noise_floor_us=100)
    assert r["verdict"] == "win" and r["p_less"] < 1e-6
    assert r["ratio"] < 0.1 and r["intervals_apart"]


def test_clear_loss_is_called_a_loss():
    base = [uniform(50, 300), uniform(60, 320)]
    worse = [uniform(1000, 5000), uniform(1100, 5200)]
    assert stats.compare(worse, base, 100)["verdict"] == "loss"


def test_difference_within_the_noise_floor_is_not_a_win():
    base = [uniform(100, 400), uniform(100, 410)]
    slightly = [uniform(90, 380), uniform(92, 385)]
    r = stats.compare(slightly, base, noise_floor_us=100)
    assert r["verdict"] == "no difference"


def test_identical_distributions_are_no_difference():
    base = [uniform(100, 400), uniform(100, 400)]
    r = stats.compare([dict(b) for b in base], base, noise_floor_us=0)
    assert r["verdict"] == "no difference" and r["ratio"] == 1


def test_overlapping_boots_are_not_a_win():
    # one boot of the variant is as bad as baseline: intervals overlap
    base = [uniform(1000, 5000), uniform(1000, 5000)]
    mixed = [uniform(50, 300), uniform(1000, 5000)]
    r = stats.compare(mixed, base, noise_floor_us=10)
    assert not r["intervals_apart"] and r["verdict"] == "no difference"


def test_one_boot_is_never_a_verdict():
    r = stats.compare([uniform(50, 300)], [uniform(1000, 5000)], 10)
    assert r["verdict"] == "too few boots" and r["p_less"] < 1e-6


def test_a_lower_tail_wins_even_if_the_body_moves_up():
    """long-irq-poll under icount: baseline 94% at 24 us and 6% at 5 ms;
    stultz-v5 all at 26-31 us.  The tail is what p99 measures."""
    base = [{24: 9400, 5000: 600}, {24: 9380, 4900: 620}]
    var = [{26: 9000, 31: 1000}, {26: 9100, 31: 900}]
    r = stats.compare(var, base, noise_floor_us=30)
    assert r["verdict"] == "win" and r["p_less"] < 1e-6
    assert stats.compare(base, var, noise_floor_us=30)["verdict"] == "loss"
