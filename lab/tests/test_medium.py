"""The medium (lab/base/medium.py): recorded with every run, and runs of
two media never compared, pooled or replicated as one measurement."""
import pytest

from lab.analyse import analysis, pool, replicate, results
from lab.base import medium, store
from lab.base.log import LabError
from lab.run import qemu, settings
from lab.tests.test_matrix_report import fake_run
from lab.tests.test_pool import published

PARALLEL = ["-accel", "tcg,icount-slice=20000,icount-parallel=on",
            "-icount", "shift=3,sleep=off"]


def test_each_setting_declares_its_medium():
    of = {s.name: s.medium for s in settings.SETTINGS}
    assert of["icount-3-slice20"] == "shared clock, 8 ns an instruction"
    assert of["icount-6-slice20"] == "shared clock, 64 ns an instruction"
    assert of["parallel-8ns"] == "parallel time, 8 ns an instruction"
    assert of["parallel-2ns"] == "parallel time, 2 ns an instruction"
    assert of["parallel-0.5ns"] == "parallel time, 0.5 ns an instruction"
    assert of["tcg-multi"] == "TCG in host time"
    assert of["kvm"] == "hardware (KVM)"


def test_run_json_records_the_medium():
    accel = qemu.Accel("tcg", "test", PARALLEL, speedup=2)
    record = accel.as_dict()
    assert record["medium"] == "parallel time, 4 ns an instruction"
    assert record["speedup"] == 2
    # a record from before the medium was named has one all the same
    old = {"name": "tcg", "args": ["-accel", "tcg,icount-slice=20000",
                                   "-icount", "shift=3,sleep=off"]}
    assert medium.of(old) == "shared clock, 8 ns an instruction"


def test_a_speedup_gives_every_vcpu_its_speed(tmp_path, monkeypatch):
    """0.5 ns an instruction: shift 0 and two instructions a step, which
    the lab's QEMU takes as per-vCPU speeds of 2048 (0004)."""
    monkeypatch.setattr(qemu, "qemu_binary", lambda accel, arch: "qemu")
    accel = qemu.Accel("tcg", "test", ["-accel", "tcg,icount-parallel=on",
                                       "-icount", "shift=0,sleep=off"],
                       emulator={"build": "x"}, speedup=2)
    m = qemu.Machine(kernel=tmp_path / "k", initrd=tmp_path / "i",
                     share=tmp_path, accel=accel, cpus=4)
    assert "tcg,icount-parallel=on,icount-speeds=2048:2048:2048:2048" in \
        m.command()
    assert qemu.with_speeds(accel.args, (290, 1024), 2)[1].endswith(
        "icount-speeds=580:2048")


def _runs(root, args):
    for variant, lo, hi in (("baseline", 1000, 5000), ("better", 60, 300)):
        fake_run(root, variant, "long", 1, lo, hi)
        f = root / variant / "long" / "boot-1" / "run.json"
        record = store.read_json(f)
        record["qemu"]["accel"]["args"] = args
        store.write_json(f, record)
    return [results.summarize(root / v / "long" / "boot-1")
            for v in ("baseline", "better")]


def test_runs_of_two_media_are_never_compared(tmp_path):
    shared = ["-accel", "tcg,icount-slice=20000", "-icount",
              "shift=3,sleep=off"]
    one = _runs(tmp_path / "one", shared)
    assert analysis.one_medium(one) == "shared clock, 8 ns an instruction"
    mixed = [one[0], _runs(tmp_path / "two", PARALLEL)[1]]
    with pytest.raises(LabError, match=r"runs of two media are never "
                       r"compared: .*baseline/long/boot-1 ran in shared "
                       r"clock, 8 ns an instruction, .*better/long/boot-1 "
                       r"in parallel time, 8 ns an instruction"):
        analysis.analyse(mixed)


def test_reports_of_two_media_are_never_pooled(tmp_path):
    a = published(tmp_path, "a", 0)
    b = published(tmp_path, "b", 1)
    for f in (b / "data").glob("*.json.gz"):
        r = replicate.read_data(f)
        r["qemu"]["accel"]["args"] = PARALLEL
        store.write_json_gz(f, r)
    with pytest.raises(LabError, match="differ in medium"):
        pool.load([a, b])
    with pytest.raises(LabError, match="'medium': runs of two media "
                       "measure two machines and are never pooled"):
        pool.load([a, b], alike=("medium",))
    assert "medium" in replicate.differences(replicate.load(a)[0],
                                             replicate.load(b)[0])


@pytest.mark.parametrize("medium, said", [
    ("parallel-1ns", "unknown medium 'parallel-1ns': name one of the "
     "settings with virtual time: icount-3-sleep,"),
    ("kvm", "--medium kvm: hardware (KVM) is no medium the lab can state"),
    ("tcg-multi", "--medium tcg-multi: TCG in host time is no medium"),
])
def test_a_medium_the_lab_cannot_honour_is_refused_before_any_build(
        medium, said, capsys):
    from lab.__main__ import main
    assert main(["run", "--variants", "baseline", "--scenarios", "idle",
                 "--medium", medium]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and "variant 1/" not in err


def test_a_medium_through_another_runner_is_refused(capsys):
    from lab.__main__ import main
    assert main(["run", "--variants", "baseline", "--scenarios", "idle",
                 "--medium", "parallel-8ns", "--runner", "lava"]) == 2
    assert "--medium parallel-8ns: media run in the lab's own QEMU here" \
        in capsys.readouterr().err


def test_each_medium_has_its_own_results_folder():
    from lab.run import matrix
    assert matrix.results_root().name == "results"
    assert matrix.results_root("local", "parallel-2ns").name == \
        "results-parallel-2ns"
    assert matrix.results_root("lava").name == "results-lava"
    accel = settings.medium_accel("parallel-0.5ns")
    assert accel.speedup == 2 and "icount-parallel=on" in accel.args[1]
    assert accel.as_dict()["medium"] == \
        "parallel time, 0.5 ns an instruction"


def _rung(folder, ratios: dict):
    """A report's analysis.json whose long/better cell has `ratios`:
    {metric: (ratio, verdict)}."""
    cell = {m: {"ratio": r, "verdict": v.split()[-1], "shown":
                v.split()[0] if " " in v else v}
            for m, (r, v) in ratios.items()}
    (folder / "data").mkdir(parents=True)
    store.write_json(folder / "data" / "analysis.json",
                     {"lead": {"long": "p99"},
                      "cells": {"long/better": {"vs_baseline": cell}}})
    return folder


def test_the_ladder_follows_each_verdict_along_the_media(tmp_path):
    from lab.report import ladder
    rungs = [("icount-3-slice20", "shared clock, 8 ns an instruction",
              _rung(tmp_path / "a", {"p99": (0.1, "lower"),
                                     "max": (0.5, "lower"),
                                     "cost": (1.4, "higher")})),
             ("parallel-8ns", "parallel time, 8 ns an instruction",
              _rung(tmp_path / "b", {"p99": (0.2, "lower"),
                                     "max": (0.9, "n.s."),
                                     "cost": (1.1, "same")})),
             ("parallel-0.5ns", "parallel time, 0.5 ns an instruction",
              _rung(tmp_path / "c", {"p99": (0.3, "withheld lower"),
                                     "max": (1.3, "higher"),
                                     "cost": (1.0, "same")}))]
    out = ladder.write(rungs, tmp_path / "ladder", "python3 -m lab ladder")
    text = (out / "README.md").read_text()
    # a finding the rule withheld (FDR) keeps its direction, said so
    assert "| long/better | baseline | p99 | x0.1 lower | x0.2 lower | " \
        "x0.3 withheld | holds (withheld by the rule on parallel-0.5ns) |" \
        in text
    assert "| long/better | baseline | max | x0.5 lower | x0.9 n.s. | " \
        "x1.3 higher | changes sign |" in text
    assert "| cost | x1.4 higher | x1.1 same | x1 same | not found on the last " \
        "rung |" in text
    assert (out / "ladder.png").stat().st_size > 10000
    assert ladder.trajectory(["n.s.", "same", "lower"]) == "appears"
    assert ladder.trajectory(["lower", "n.s.", "lower"]) == "comes and goes"
    assert ladder.trajectory(["n.s.", None, "same"]) == "none in any medium"


@pytest.mark.parametrize("argv, said", [
    (["--media", "icount-3-slice20"], "at least two media"),
    (["--media", "icount-3-slice20,parallel-1ns"],
     "unknown medium 'parallel-1ns'"),
    (["--media", "icount-3-slice20,parallel-8ns", "--medium",
      "parallel-8ns"], "give --media, not --medium"),
])
def test_a_ladder_that_cannot_run_is_refused_before_any_build(
        argv, said, capsys):
    from lab.__main__ import main
    assert main(["ladder", "--variants", "baseline", "--scenarios",
                 "idle", *argv]) == 2
    err = capsys.readouterr().err
    assert said in err and "variant 1/" not in err
