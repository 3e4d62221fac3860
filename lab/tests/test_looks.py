"""The group-sequential plan: every cell gets 5 boots, a comparison the
first look leaves undecided gets 10 for both cells, and each look judges
the boots measured by then at its own share of the false-finding rate
(stats.Looks, analysis._against_base, matrix.run)."""
from lab.analyse import analysis
from lab.base import arches, stats, variants
from lab.run import matrix
from lab.run.scenario import Scenario


def cell(p99s: list, boots: list = None) -> dict:
    boots = boots or list(range(1, len(p99s) + 1))
    per_boot = {m: [float("nan")] * len(p99s) for m in
                analysis.BOOT_METRICS}
    per_boot["p99"] = list(p99s)
    per_boot["p99_over_200us"] = [float(x > 200) for x in p99s]
    return {"boots": boots, "per_boot": per_boot, "cost": {}}


def judged(cells: dict, looks: bool = True) -> dict:
    a = {"bases": {"baseline": "baseline", "mine": "baseline"},
         "lead": {"s": "p99"}, "withheld": {}, "cells": cells,
         "looks": {"boots": list(stats.LOOKS.boots),
                   "alpha": list(stats.LOOKS.alpha)} if looks else None}
    return analysis.judge(a, {}, declared={})


BASE = [1000, 1010, 990, 1005, 995, 1002, 998, 1007, 993, 1001]


def test_a_cell_the_first_look_separates_is_judged_on_its_first_boots():
    """Five boots against five that separate completely (p = 2/252,
    under the first look's 0.008) settle the comparison: its verdict is
    the first look's, whatever boots 6-10 hold."""
    mine = [500, 510, 490, 505, 495, 1200, 1300, 1250, 1100, 1150]
    a = judged({"s/baseline": cell(BASE), "s/mine": cell(mine)})
    vs = a["cells"]["s/mine"]["vs_baseline"]["p99"]
    assert vs["verdict"] == "lower" and vs["look"] == 1
    assert vs["boots"] == [5, 5] and a["cells"]["s/mine"]["settled"]


def test_an_undecided_cell_is_judged_again_on_ten_boots_at_its_alpha():
    """The first five overlap (no finding, not the same); with ten boots
    the second look decides at its own alpha, 0.002."""
    mine = [600, 1400, 700, 650, 620, 600, 610, 620, 630, 640]
    a = judged({"s/baseline": cell(BASE), "s/mine": cell(mine)})
    vs = a["cells"]["s/mine"]["vs_baseline"]["p99"]
    assert vs["look"] == 2 and vs["boots"] == [10, 10]
    assert vs["verdict"] == "lower" and vs["p"] < stats.LOOKS.alpha[1]
    # with its first five boots only, it stays undecided and marked so
    five = judged({"s/baseline": cell(BASE[:5]), "s/mine": cell(mine[:5])})
    assert five["cells"]["s/mine"]["settled"] is False
    assert analysis.unsettled(five) == {("mine", "s"), ("baseline", "s")}
    # a fixed plan judges every boot at the rule's alpha
    fixed = judged({"s/baseline": cell(BASE), "s/mine": cell(mine)},
                   looks=False)
    assert "look" not in fixed["cells"]["s/mine"]["vs_baseline"]["p99"]


def test_a_failed_boot_neither_sticks_a_cell_nor_leaves_boots_unjudged():
    """Boot 3 of the cell failed: its first look takes its first five
    boots there are (1, 2, 4, 5, 6), and its second, with nine, every
    boot it has; so do a scenario's boots past the last look."""
    mine = [600, 1400, 700, 650, 620, 600, 610, 620, 630]
    failed = cell(mine, boots=[1, 2, 4, 5, 6, 7, 8, 9, 10])
    a = judged({"s/baseline": cell(BASE), "s/mine": failed})
    vs = a["cells"]["s/mine"]["vs_baseline"]["p99"]
    assert vs["look"] == 2 and vs["boots"] == [9, 10]
    # p = 0.003: a finding at one look's 0.01, not at the second's 0.002
    assert vs["verdict"] == "n.s." and vs["p"] < 0.01
    assert analysis._first(failed, 5)["per_boot"]["p99"] == mine[:5]
    fifteen = judged({"s/baseline": cell(BASE + BASE[:5]),
                      "s/mine": cell(mine + mine[:6])})
    assert fifteen["cells"]["s/mine"]["vs_baseline"]["p99"]["boots"] == \
        [15, 15]


def test_the_looks_spend_the_rules_alpha():
    assert sum(stats.LOOKS.alpha) <= stats.RULE.alpha + 1e-12
    # the first look can decide a complete separation of 5 against 5
    assert 2 / 252 < stats.LOOKS.alpha[0]


def test_the_matrix_gives_the_second_look_to_undecided_cells_only(
        tmp_path, monkeypatch):
    class V:
        explains = True
        arch = arches.X86_64

        def kernel_variant(self):
            return self

        def __init__(self, name):
            self.name, self.append = name, ""

        def described(self):
            return dict(variants.CONF_DEFAULTS, name=self.name)

        def module_args(self, args):
            return args

        def plan_env(self):
            return {}

    class Built:
        meta = {"hash": "h"}
        image = tmp_path / "bzImage"

    scens = []
    for name in ("a", "b"):
        s = Scenario(name=name, path=tmp_path / f"{name}.scenario",
                     description="x", duration=1)
        s.path.write_text("description = x\nduration = 1\n")
        scens.append(s)
    monkeypatch.setattr(matrix.kernel, "build", lambda v, i, n, force: Built())
    monkeypatch.setattr(matrix.guestbuild, "initrd", lambda v, b: None)

    class Runner:
        name = "local"
        ran = []

        def accel(self, image):
            return matrix.qemu.Accel("tcg", "test", ["-accel", "tcg"])

        def run(self, todo, built, initrds, accel, root):
            self.ran += [(c.variant.name, c.scenario.name, c.boot,
                          c.looks) for c in todo]
    runner = Runner()
    asked = []

    def unsettled(root):
        asked.append(root)
        return {("base", "b"), ("mine", "b")}
    matrix.run([V("base"), V("mine")], scens, 5, tmp_path / "res",
               runner=runner, looks=(5, 10), unsettled=unsettled)
    assert asked == [tmp_path / "res"]
    first = [r for r in runner.ran if r[2] <= 5]
    second = [r for r in runner.ran if r[2] > 5]
    assert len(first) == 2 * 2 * 5
    assert sorted({(v, s) for v, s, _, _ in second}) == [("base", "b"),
                                                        ("mine", "b")]
    assert len(second) == 2 * 5 and all(r[3] == (5, 10) for r in runner.ran)
