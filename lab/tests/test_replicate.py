"""`python3 -m lab replicate`: what differs in how two reports were
made, whether they are a repeat, and which verdicts agree."""
import copy
import gzip

import pytest

from lab.analyse import replicate
from lab.base import store
from lab.base.log import LabError


def run(variant, boot, cyclictest="-t 1 -p 99 -i 1000", seed=1):
    return {"variant": variant, "scenario": "long", "boot": boot,
            "cpus": 2, "memory_mb": 1024, "accel": "tcg",
            "plan_env": {"CYCLICTEST": cyclictest, "PHASE_SEED": seed},
            "made": {"lab_commit": "abc", "plan_sha256": "p" * 64,
                     "scenario_text": "duration = 10\n"},
            "kernel": {"hash": variant * 4},
            "qemu": {"command": f"qemu -initrd /c/{variant}-1.cpio",
                     "host_cpu": "Xeon",
                     "accel": {"setting": "icount-3-slice20",
                               "emulator": {"build": "q1"}}}}


def report(folder, runs, verdict):
    (folder / "data").mkdir(parents=True)
    for r in runs:
        store.write_json_gz(folder / "data" / f"{r['variant']}-long-boot"
                            f"{r['boot']}.json.gz", r)
    vs = {"p99": {"verdict": verdict, "shown": verdict},
          "ksoftirqd_cpu_percent": {"verdict": "n.s.", "shown": "n.s."}}
    store.write_json(folder / "data" / "analysis.json", {
        "lead": {}, "cells": {
            "long/baseline": {"cost": {}},
            "long/mine": {"cost": {"ksoftirqd_cpu_percent": [1.0]},
                          "vs_baseline": vs}}})
    return folder


def test_two_runs_of_one_plan_are_a_repeat_and_their_verdicts_compared(
        tmp_path):
    a = report(tmp_path / "a", [run(v, 1, seed=1) for v in
                                ("baseline", "mine")], "lower")
    b = report(tmp_path / "b", [run(v, 1, seed=2) for v in
                                ("baseline", "mine")], "n.s.")
    text = replicate.text(str(a), str(b))
    assert "**A repeat**" in text          # the phase seeds differ only
    assert "1 of 2 comparisons agree (50.0%); lead metrics 0 of 1" in text
    assert "| long/mine | p99 | lower | n.s. |" in text


def test_the_same_runs_in_two_reports_are_no_repeat(tmp_path, monkeypatch):
    """A report made again from the same results (or sharing its base's
    runs with another) reports one measurement twice."""
    a = report(tmp_path / "a", [run(v, 1, seed=7) for v in
                                ("baseline", "mine")], "lower")
    b = report(tmp_path / "b", [run(v, 1, seed=7) for v in
                                ("baseline", "mine")], "lower")
    text = replicate.text(str(a), str(b))
    assert "**Not a repeat**: 2 runs are the same runs in both (e.g. " \
        "long/baseline boot 1)" in text
    monkeypatch.setattr(replicate.paths, "REPO", tmp_path)
    (tmp_path / "reports").mkdir()
    a.rename(tmp_path / "reports" / "2026-01-01-a")
    b.rename(tmp_path / "reports" / "2026-01-02-b")
    assert replicate.earlier_repeats(replicate.load(
        tmp_path / "reports" / "2026-01-02-b")) == []


def test_a_changed_cyclictest_line_is_named_and_no_repeat(tmp_path):
    a = report(tmp_path / "a", [run("mine", 1), run("baseline", 1)],
               "lower")
    b = report(tmp_path / "b", [run("mine", 1, "-t 1 -p 99 -i 1000 -h"),
                                run("baseline", 1)], "lower")
    text = replicate.text(str(a), str(b))
    assert "**plan parameters differs** in 1 runs, e.g. long/mine boot 1" \
        in text
    assert '-i 1000 -h' in text
    assert "**Not a repeat**: plan parameters differ" in text
    assert "**A repeat**" not in text


def test_runs_that_did_not_record_their_plan_are_no_repeat(tmp_path):
    old = run("mine", 1)
    del old["made"]
    a = report(tmp_path / "a", [old], "lower")
    b = report(tmp_path / "b", [run("mine", 1)], "lower")
    text = replicate.text(str(a), str(b))
    assert "**plan script not recorded**" in text
    assert "**Not a repeat**" in text


def test_a_folder_that_is_no_report_is_named(tmp_path):
    with pytest.raises(LabError, match="nothing-here: not a report"):
        replicate.report_folder(str(tmp_path / "nothing-here"))


def test_a_new_report_finds_the_earlier_ones_that_it_repeats(
        tmp_path, monkeypatch):
    monkeypatch.setattr(replicate.paths, "REPO", tmp_path)
    reports = tmp_path / "reports"
    first = report(reports / "2026-01-01-a", [run("mine", 1, seed=1)],
                   "lower")
    report(reports / "2026-01-02-other", [run("mine", 1, "-t 2")], "n.s.")
    new = report(reports / "2026-01-03-b", [run("mine", 1, seed=2)],
                 "lower")
    assert [r.folder for r in replicate.earlier_repeats(
        replicate.load(new))] == [first]


def test_two_results_folders_are_made_into_reports_and_compared(
        tmp_path, capsys):
    from lab.__main__ import main
    from lab.tests.test_matrix_report import fake_run
    for root in ("a", "b"):
        for boot in range(1, 6):
            fake_run(tmp_path / root, "baseline", "long", boot, 1000, 5000,
                     seed=boot)
            fake_run(tmp_path / root, "better", "long", boot, 60, 400,
                     seed=10 + boot)
    assert main(["replicate", str(tmp_path / "a"), str(tmp_path / "b")]) \
        == 0
    out = capsys.readouterr().out
    assert "Runs of the same cell and boot in both: 10" in out
    assert "comparisons agree (100.0%)" in out
    assert main(["replicate", str(tmp_path / "a"),
                 str(tmp_path / "nothing")]) == 2
    # a report against itself is no repeat: one line, not "all agree"
    capsys.readouterr()
    assert main(["replicate", str(tmp_path / "a"), str(tmp_path / "a")]) \
        == 2
    assert "are one report" in capsys.readouterr().err


def test_verdicts_are_compared_under_the_current_rules():
    """A report printed under older rules is judged again: its "n.s."
    on a cell the current rules call lower does not count as a
    disagreement with a newer report."""
    from lab.base import metrics

    def cell(p99s):
        return {"per_boot": {m.name: list(p99s) for m in metrics.LATENCY
                             if not m.of_boot},
                "cost": {}}
    base, mine = [100, 101, 99, 102, 98], [10, 11, 9, 12, 8]
    old = {"bases": {"baseline": "baseline", "mine": "baseline"},
           "lead": {}, "withheld": {},
           "cells": {"long/baseline": cell(base), "long/mine": cell(mine)}}
    old["cells"]["long/mine"]["vs_baseline"] = {
        "p99": {"verdict": "n.s.", "shown": "n.s."}}
    assert replicate.verdicts(old, old)[0][2] == "n.s."
    again = replicate.rejudged(old)
    assert again["cells"]["long/mine"]["vs_baseline"]["p99"]["shown"] == \
        "lower"
    assert old["cells"]["long/mine"]["vs_baseline"]["p99"]["shown"] == \
        "n.s."                              # the published one untouched
    # a metric the report predates, in no cell, is left unjudged: the
    # rest is judged again
    predates = copy.deepcopy(old)
    for c in predates["cells"].values():
        del c["per_boot"]["p99.99"]
    partly = replicate.rejudged(predates)
    assert partly["cells"]["long/mine"]["vs_baseline"]["p99"]["shown"] == \
        "lower"
    assert "p99.99" not in partly["cells"]["long/mine"]["vs_baseline"]
    # ... unless the scenario is judged by it: then kept as printed
    predates["lead"] = {"long": "p99.99"}
    assert replicate.rejudged(predates) is predates
    # too old for today's rules (no per-boot values): kept as printed
    del old["cells"]["long/mine"]["per_boot"]
    assert replicate.rejudged(old) is old
    # today's format with a fault in it is an error, not a silent "kept"
    old["cells"]["long/mine"]["per_boot"] = \
        dict(again["cells"]["long/mine"]["per_boot"], p99=["x"] * 5)
    with pytest.raises(ValueError):
        replicate.rejudged(old)


def test_the_findings_one_run_has_and_its_repeat_lacks_are_listed(
        tmp_path):
    a = report(tmp_path / "2026-01-01-a", [run("mine", 1, seed=1)],
               "lower")
    b = report(tmp_path / "2026-01-02-b", [run("mine", 1, seed=2)], "n.s.")
    assert replicate.unreplicated(replicate.load(b).an,
                                  [replicate.load(a)]) == [
        {"report": "2026-01-01-a", "cell": "long/mine", "metric": "p99",
         "here": "n.s.", "there": "lower"}]
    assert replicate.unreplicated(replicate.load(a).an,
                                  [replicate.load(a)]) == []


def test_a_new_report_names_its_repeats_in_its_summary(tmp_path,
                                                       monkeypatch):
    """Made under reports/, a report finds the earlier runs of its plan,
    writes the replicate table beside itself and says in its summary
    whether its findings are theirs."""
    from lab.report import publish
    from lab.tests.test_matrix_report import fake_run
    monkeypatch.setattr(replicate.paths, "REPO", tmp_path)
    names = ("2026-01-01-a", "2026-01-02-b")
    # better is lower in the first run, not in the second
    for n, (name, low) in enumerate(zip(names, (60, 1000))):
        for boot in range(1, 6):
            for variant, lo, hi in (("baseline", 1000, 5000),
                                    ("better", low, 5 * low)):
                seed = 100 * n + 10 * (variant == "better") + boot
                fake_run(tmp_path / name, variant, "long", boot, lo, hi,
                         seed=seed)
                # how it was made, as run.json records it
                f = tmp_path / name / variant / "long" / f"boot-{boot}" \
                    / "run.json"
                record = store.read_json(f)
                record.update(lab_commit="abc", plan_sha256="p" * 64)
                record["scenario"]["text"] = "duration = 10\n"
                record["qemu"]["command"] = f"qemu -initrd /c/{variant}.cpio"
                store.write_json(f, record)
        publish.write(tmp_path / name, tmp_path / "reports" / name,
                      {"long": "test"}, "test")
    first = (tmp_path / "reports" / names[0] / "report.txt").read_text()
    assert "earlier run" not in first
    new = tmp_path / "reports" / names[1]
    assert (new / f"replicate-{names[0]}.md").is_file()
    summary = (new / "report.txt").read_text().split("\nSetup")[0]
    assert "Not replicated in an earlier run of this plan " \
        f"({names[0]}): long/better p99 same here, lower in " \
        f"{names[0]}." in " ".join(summary.split())


def test_a_traced_boot_and_an_untraced_one_are_made_alike(tmp_path):
    """The trace phase follows the measurement in one boot a cell: a
    pool's boot 6 (another run's boot 1, traced) repeats a new run's
    untraced boot 6; two traced boots with other trace settings do not."""
    def traced(variant, trace, seed):
        r = run(variant, 1, seed=seed)
        r["plan_env"]["TRACE"] = trace
        return r
    a = report(tmp_path / "a", [traced("mine", 100, 1)], "lower")
    b = report(tmp_path / "b", [traced("mine", "", 2)], "lower")
    c = report(tmp_path / "c", [traced("mine", 200, 3)], "lower")
    assert replicate.is_repeat(replicate.load(a)[0], replicate.load(b)[0])
    assert not replicate.is_repeat(replicate.load(a)[0],
                                   replicate.load(c)[0])


def test_a_comparison_declared_unresolved_is_no_finding_in_any_run(
        tmp_path, monkeypatch):
    """Declared in common/unresolved.txt: tested as any other, shown as
    "unresolved", so two runs whose tests differ there do not disagree
    on a finding; the replicate table still says what each test gave."""
    from lab.base import metrics, unresolved

    def cell(p99s):
        return {"per_boot": {m.name: list(p99s) for m in metrics.LATENCY
                             if not m.of_boot},
                "cost": {}}

    def analysis(base):
        return {"bases": {"baseline": "baseline", "stultz-v5": "baseline"},
                "lead": {}, "withheld": {},
                "cells": {"fs-noise/baseline": cell(base),
                          "fs-noise/stultz-v5": cell([68, 67, 68, 69, 68])}}
    high, mixed = [1100, 1096, 1150, 1018, 1203], [333, 72, 1049, 831, 61]
    declared = tmp_path / "unresolved.txt"
    declared.write_text("# why\nfs-noise stultz-v5 p99 the base flips\n")
    monkeypatch.setattr(unresolved, "FILE", declared)
    a, b = (replicate.rejudged(analysis(x)) for x in (high, mixed))
    got = [x["cells"]["fs-noise/stultz-v5"]["vs_baseline"]["p99"]
           for x in (a, b)]
    assert [g["verdict"] for g in got] == ["lower", "n.s."]
    assert [g["shown"] for g in got] == ["unresolved", "unresolved"]
    assert got[0]["unresolved"] == "the base flips"
    assert ("fs-noise/stultz-v5", "p99", "unresolved", "unresolved") in \
        replicate.verdicts(a, b)
    # undeclared, the same two runs disagree on a finding
    declared.write_text("")
    a, b = (replicate.rejudged(analysis(x)) for x in (high, mixed))
    assert ("fs-noise/stultz-v5", "p99", "lower", "n.s.") in \
        replicate.verdicts(a, b)


def test_a_bad_declaration_names_its_file_and_line(tmp_path):
    from lab.base import unresolved
    f = tmp_path / "unresolved.txt"
    for text, why in [
            ("# c\nfs-noise zijlstra p99 flips\nfs-noise zijlstra p98 x\n",
             r"unresolved.txt:3: expected 'scenario variant metric why' "
             r"with a metric"),
            ("fs-noise zijlstra p99 x\nfs-noise zijlstra p99 y\n",
             r"unresolved.txt:2: fs-noise zijlstra p99 declared twice"),
            ("fs-noise zijlstr p99 typo\n",
             r"unresolved.txt:1: no variant 'zijlstr' under variants/"),
            ("fs-nois zijlstra p99 typo\n",
             r"unresolved.txt:1: no scenario 'fs-nois' under "
             r"common/scenarios/")]:
        f.write_text(text)
        with pytest.raises(LabError, match=why):
            unresolved.load(f)
    # a sweep's rate is named after its file
    f.write_text("nic-sweep-10k zijlstra p99 x\n")
    assert unresolved.load(f)
    # the repository's own file reads (it declares nothing since the
    # pooled runs decided its two comparisons)
    assert unresolved.load() == {}


@pytest.mark.parametrize("damage, words", [
    (lambda raw: raw[:len(raw) // 2], "unreadable"),
    (lambda raw: b"not gzip", "unreadable"),
    (lambda raw: gzip.compress(b'{"variant": "mine", "scenario": "long", '
                               b'"boot": "one"}'),
     "boot is 'one', not a whole number"),
    (lambda raw: gzip.compress(b'["mine", "long", 1]'), "not a run summary"),
    (lambda raw: gzip.compress(b'{"variant": "mine", "scenario": "long", '
                               b'"boot": 1, "histogram": [1, 2]}'),
     "histogram is [1, 2], not"),
    (lambda raw: gzip.compress(b'{"variant": "mine", "scenario": "long", '
                               b'"boot": 1, "boot_values": [9]}'),
     "boot_values is [9], not an object"),
], ids=["truncated", "not-gzip", "boot", "a-list", "histogram",
        "boot-values"])
def test_a_damaged_run_summary_is_named(tmp_path, damage, words):
    """Issue 53: a truncated .json.gz in a report's data/, or a field of
    the wrong type there, ended replicate and pool in an EOFError or a
    TypeError: one line naming the file."""
    a = report(tmp_path / "a", [run(v, 1, seed=1) for v in
                                ("baseline", "mine")], "lower")
    b = report(tmp_path / "b", [run(v, 1, seed=2) for v in
                                ("baseline", "mine")], "n.s.")
    f = b / "data" / "mine-long-boot1.json.gz"
    f.write_bytes(damage(f.read_bytes()))
    with pytest.raises(LabError) as e:
        replicate.text(str(a), str(b))
    assert str(e.value).startswith(f"{f}: ") and words in str(e.value)
    assert "\n" not in str(e.value)
