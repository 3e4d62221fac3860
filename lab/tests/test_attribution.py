"""Which patch brings each effect: the prefixes as variants, and the
attribution table from their verdicts (lab/build/prefixes.py,
lab/analyse/attribution.py)."""
import pytest

from lab.analyse import attribution
from lab.base.log import LabError
from lab.build import prefixes
from lab.base import variants
from lab.tests.conftest import make_variant

KCONFIG_PATCH = """From 1 Mon Sep 17 00:00:00 2001
Subject: [PATCH 2/2] sched: add the switch

---
diff --git a/kernel/Kconfig.x b/kernel/Kconfig.x
--- a/kernel/Kconfig.x
+++ b/kernel/Kconfig.x
@@ -1,0 +1,3 @@
+config MY_SWITCH
+	bool "switch"
+
"""


def test_each_prefix_is_a_variant_and_the_last_is_the_series(variant_root):
    make_variant(variant_root, "baseline")
    folder = make_variant(
        variant_root, "mine", series="a.patch\nb.patch\n",
        patches={"a.patch": "Subject: [PATCH 1/2] a\n",
                 "b.patch": KCONFIG_PATCH},
        config="# the series' switch\nCONFIG_MY_SWITCH=y\nCONFIG_HZ_250=y\n")
    mine = variants.load(folder)
    base, one, both = prefixes.write(mine, variant_root.parent / "steps")
    assert (base.name, one.name, both.name) == \
        ("baseline", "mine.1", "mine")
    assert [p.name for p in one.patches] == ["a.patch"]
    assert [p.name for p in both.patches] == ["a.patch", "b.patch"]
    # patch 2 adds MY_SWITCH: prefix 1 cannot ask for it
    assert one.config.read_text() == "CONFIG_HZ_250=y\n"
    assert "Left out of its config" in (one.folder / "README.md").read_text()
    # the whole series, byte for byte: the kernel it always has
    assert both.content_hash("d", "r") == mine.content_hash("d", "r")
    assert one.base == both.base == "baseline"


def test_a_single_patch_has_nothing_to_attribute(variant_root):
    make_variant(variant_root, "baseline")
    folder = make_variant(variant_root, "one", series="a.patch\n",
                          patches={"a.patch": "x"})
    with pytest.raises(LabError, match="1 patch.*needs a series of two"):
        prefixes.write(variants.load(folder), variant_root.parent / "s")


def cell(p99, cost_verdict="n.s."):
    return {"cost": {"softirq_wait_max_us": [1]},
            "vs_baseline": {
                "p99": {"p": 0.008, "verdict": p99, "shown": p99,
                        "ratio": 0.01},
                "softirq_wait_max_us": {"p": 0.008, "verdict": cost_verdict,
                                        "shown": cost_verdict,
                                        "ratio": 500.0}}}


def test_the_first_prefix_that_shows_each_finding():
    a = {"lead": {}, "cells": {
        "long/base": {"cost": {"softirq_wait_max_us": [1]}},
        "long/s.1": cell("n.s."),
        "long/s.2": cell("lower", "higher"),
        "long/s": cell("lower", "n.s."),
        "idle/s.1": cell("higher"),
        "idle/s.2": cell("n.s."),
        "idle/s": cell("higher")}}
    rows = attribution.table(a, ["s.1", "s.2", "s"])
    got = {(r["scenario"], r["metric"]): (r["first"], r["holds"])
           for r in rows}
    # lower from patch 2 and kept; higher at 1, lost at 2, back at 3;
    # the cost finding of prefix 2 alone is not the series' finding
    assert got == {("long", "p99"): (2, True), ("idle", "p99"): (1, False)}
    text = attribution.markdown(rows, ["s.1", "s.2", "s"],
                                ["first", "second", "third"])
    assert "| long | p99 | lower x0.01 | n.s. | lower | lower | patch 2 |" \
        in text
    assert "patch 1, not kept by every later step" in text
    assert "- patch 3, third: no finding first" in text


def test_a_finding_a_later_patch_undoes_is_listed_apart():
    """Prefix 2's cost finding is not the series': listed as shown by a
    prefix only, with the step that showed it."""
    a = {"lead": {}, "cells": {
        "long/base": {"cost": {"softirq_wait_max_us": [1]}},
        "long/s.1": cell("n.s."),
        "long/s.2": cell("lower", "higher"),
        "long/s": cell("lower", "n.s.")}}
    steps = ["s.1", "s.2", "s"]
    lost = attribution.undone(a, steps)
    assert lost == [{"scenario": "long", "metric": "softirq_wait_max_us",
                     "steps": ["n.s.", "higher", "n.s."]}]
    text = attribution.markdown(attribution.table(a, steps), steps,
                                ["a", "b", "c"], lost)
    assert "- long softirq_wait_max_us: higher at 1-2" in text
