"""How often two runs would disagree: resampled boots (lab/analyse/power.py)."""
from lab.analyse import power


def analysis(variant_p99, base_p99):
    cell = {"per_boot": {"p99": variant_p99}, "cost": {}}
    base = {"per_boot": {"p99": base_p99}, "cost": {}}
    return {"bases": {"rt": "main", "main": "main"}, "lead": {"s": "p99"},
            "cells": {"s/rt": cell, "s/main": base}}


def test_a_rare_mode_in_the_base_splits_runs_of_5_boots_not_of_15():
    # the base's p99 far above the variant's, but one boot in 12 at the
    # variant's level (mainline-6.12 in all-busy): at 5 boots such a boot
    # in the base decides the comparison
    base = [4300.0 + 20 * i for i in range(22)] + [63.0, 70.0]
    rows = power.disagreement([analysis([66.0 + i % 4 for i in range(24)],
                                         base)], boots=(5, 15), trials=300)
    (row,) = rows
    assert (row["cell"], row["metric"], row["measured"]) == \
        ("s/rt", "p99", [24, 24])
    assert power.disagree(row["found"][5]) > 0.25
    assert power.disagree(row["found"][15]) < 0.1


def test_a_clear_effect_is_found_in_every_run():
    rows = power.disagreement([analysis([10.0 + i for i in range(10)],
                                        [500.0 + i for i in range(10)])],
                              boots=(5,), trials=50)
    assert rows[0]["found"][5] == 1.0
    text = power.text(rows, ["r"], (5,), 50, 1)
    # nothing two runs could disagree on: no row, a sum of 0
    assert "s/rt" not in text
    assert "expect: 0.00 at 5 boots" in text


def test_no_comparison_of_a_base_with_itself_and_cost_metrics_counted():
    a = analysis([1.0] * 5, [2.0] * 5)
    a["cells"]["s/rt"]["cost"] = {"block_write_mb_s": [16.0] * 5}
    a["cells"]["s/main"]["cost"] = {"block_write_mb_s": [16.1] * 5}
    assert [(c, m) for c, m, _, _ in power.comparisons([a, a])] == \
        [("s/rt", "p99"), ("s/rt", "block_write_mb_s")]
    # two analyses: their boots of a cell pooled
    assert len(power.comparisons([a, a])[0][2]) == 10
