"""`python3 -m lab pool`: repeat reports of one plan as one report of
all their boots."""
import pytest

from lab.analyse import pool, replicate
from lab.base import store
from lab.base.log import LabError
from lab.report import publish
from lab.tests.test_matrix_report import fake_run


def published(tmp_path, name, run_n, cyclictest="-t 1 -p 99 -i 1000"):
    """A report of 5 boots of baseline and better on `long`, recorded as
    made by one plan (the cyclictest line aside)."""
    root = tmp_path / "results" / name
    for boot in range(1, 6):
        for variant, lo, hi in (("baseline", 1000, 5000),
                                ("better", 60, 300)):
            seed = 100 * run_n + 10 * (variant == "better") + boot
            fake_run(root, variant, "long", boot, lo, hi, seed=seed)
            f = root / variant / "long" / f"boot-{boot}" / "run.json"
            record = store.read_json(f)
            record.update(lab_commit="abc", plan_sha256="p" * 64)
            record["scenario"]["text"] = "duration = 10\n"
            record["qemu"]["command"] = f"qemu -initrd /c/{variant}.cpio"
            record.setdefault("plan_env", {})["CYCLICTEST"] = cyclictest
            store.write_json(f, record)
    return publish.write(root, tmp_path / name, {"long": "test"}, "test")


def test_two_runs_pool_into_one_report_of_ten_boots(tmp_path):
    a, b = (published(tmp_path, n, k) for k, n in enumerate("ab"))
    runs, analyses = pool.load([a, b])
    p = pool.analyse(runs, analyses, set(), {})
    cell = p["cells"]["long/better"]
    assert cell["boots"] == list(range(1, 11))
    # the second report's boots follow the first's, values unchanged
    assert cell["per_boot"]["p99"] == (
        analyses[0]["cells"]["long/better"]["per_boot"]["p99"] +
        analyses[1]["cells"]["long/better"]["per_boot"]["p99"])
    assert {"variant": "better", "scenario": "long", "boot": 6,
            "from": "b", "from_boot": 1} in p["pooled"]
    assert cell["vs_baseline"]["p99"]["boots"] == [10, 10]
    out = publish.write_analysed(runs, p, tmp_path / "pooled",
                                 {"long": "test"}, "python3 -m lab pool")
    summary = (out / "report.txt").read_text().split("\nSetup")[0]
    assert "10 boots per cell" in summary and "2 runs" in summary
    # the runs stay in the reports pooled: no copy of them; replicate
    # reads them from there, numbered as in the pool
    assert [f.name for f in (out / "data").iterdir()] == ["analysis.json"]
    again = replicate.load(out)[0]
    assert len(again) == 20 and again[("better", "long", 6)][
        "phase_seed"] == replicate.load(b)[0][("better", "long", 1)][
        "phase_seed"]
    # each report pooled shares its runs with the pool, whatever their
    # numbers there
    for part in (a, b):
        assert "**Not a repeat**: 10 runs are the same runs" in \
            replicate.text(str(part), str(out))


def test_a_report_of_another_plan_is_not_pooled(tmp_path):
    a = published(tmp_path, "a", 0)
    b = published(tmp_path, "b", 1, cyclictest="-t 1 -p 99 -i 1000 -h")
    with pytest.raises(LabError, match="b: not a repeat of .*a, so not "
                       "pooled: they differ in plan parameters"):
        pool.load([a, b])
    with pytest.raises(LabError, match="at least two reports"):
        pool.load([a])


def test_one_report_named_twice_is_not_pooled(tmp_path):
    """Its boots would count twice."""
    a = published(tmp_path, "a", 0)
    assert replicate.shared_runs(replicate.load(a)[0],
                                 replicate.load(a)[0])
    with pytest.raises(LabError, match="the very same runs"):
        pool.load([a, a])


def test_a_damaged_run_summary_is_named(tmp_path):
    """Issue 53: a truncated .json.gz in a pooled report's data/ ended
    the pool in an EOFError: one line naming the file."""
    from lab.tests.test_replicate import report, run
    a = report(tmp_path / "a", [run(v, 1, seed=1) for v in
                                ("baseline", "mine")], "lower")
    b = report(tmp_path / "b", [run(v, 1, seed=2) for v in
                                ("baseline", "mine")], "n.s.")
    f = b / "data" / "mine-long-boot1.json.gz"
    f.write_bytes(f.read_bytes()[:20])
    with pytest.raises(LabError, match=f"^{f}: unreadable"):
        pool.load([a, b])
    store.write_json_gz(f, dict(run("mine", 1, seed=2), cpus="2"))
    with pytest.raises(LabError, match=f"^{f}: cpus is '2', not a whole"):
        pool.load([a, b])


def test_a_pool_finds_its_reports_by_path_and_refuses_changed_ones(
        tmp_path):
    """Issue 61: a pool stored only the base name of what it pooled and
    read it back from beside itself: outside reports/ it failed, and
    beside another report of that name it took that one's boots."""
    a, b = (published(tmp_path / "elsewhere", n, k)
            for k, n in enumerate("ab"))
    runs, analyses = pool.load([a, b])
    p = pool.analyse(runs, analyses, set(), {}, folders=[a, b])
    assert p["pooled_sources"]["a"]["path"] == str(a.resolve())
    out = publish.write_analysed(runs, p, tmp_path / "reports" / "pooled",
                                 {"long": "test"}, "test")
    assert len(replicate.load(out)[0]) == 20       # found where they are
    # another report of one of those names beside the pool is not taken
    published(tmp_path / "reports", "a", 7)
    assert len(replicate.load(out)[0]) == 20
    # the pooled report itself changed: refused, naming it
    f = next((a / "data").glob("better-long-boot1.json.gz"))
    store.write_json_gz(f, dict(replicate.read_data(f), phase_seed=99))
    with pytest.raises(LabError, match="have changed .*: pool again"):
        replicate.load(out)


def test_two_reports_of_one_name_are_not_pooled(tmp_path):
    a = published(tmp_path / "one", "a", 0)
    b = published(tmp_path / "two", "a", 1)
    with pytest.raises(LabError, match="two reports named 'a'"):
        pool.load([a, b])
