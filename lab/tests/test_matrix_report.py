"""The matrix resumes where it stopped; the report reads run folders."""
import json
import random
import re

import pytest

from lab import matrix, report, store
from lab.scenario import Scenario

SOFTIRQS = """\
                    CPU0       CPU1
          HI:          0          0
       TIMER:        {t}        100
      NET_TX:          0          0
      NET_RX:          0          0
       BLOCK:        {b}          0
    IRQ_POLL:          0          0
     TASKLET:          0          0
       SCHED:          0          0
     HRTIMER:          0          0
         RCU:          0          0
"""


def fake_run(root, variant, scen, boot, lo, hi, status="ok", seed=0):
    d = root / variant / scen / f"boot-{boot}"
    d.mkdir(parents=True)
    rng = random.Random(seed)
    hist = {}
    for _ in range(2000):
        us = rng.randint(lo, hi)
        hist[str(us)] = hist.get(str(us), 0) + 1
    (d / "cyclictest.json").write_text(json.dumps(
        {"num_threads": 1, "thread": {"0": {
            "histogram": hist, "cycles": 2000, "max": hi}}}))
    (d / "affinity.txt").write_text("41 0-1\n42 0-1\n")
    (d / "softirqs-before").write_text(SOFTIRQS.format(t=10, b=0))
    (d / "softirqs-after").write_text(SOFTIRQS.format(t=60, b=700))
    (d / "ksoftirqd-before").write_text("ksoftirqd/0 10\nksoftirqd/1 0\n")
    (d / "ksoftirqd-after").write_text("ksoftirqd/0 40\nksoftirqd/1 0\n")
    (d / "bg-0.log").write_text("noise\nmetric block_read_mb_s 123 MB/s\n")
    if scen == "long":
        samples = [{"i": i, "latency_us": 300 if i % 2 else 4000,
                    "cpu": i % 2, "prev_cpu": 0,
                    "waker_us": 100 if i < 8 else 3000} for i in range(10)]
        (d / "probe.jsonl").write_text("".join(
            json.dumps(x) + "\n" for x in samples) + json.dumps(
            {"summary": True, "n": 10, "requested": 10, "missed": 0}) +
            "\n")
    store.write_json(d / "run.json", {
        "variant": variant, "status": status, "boot": boot,
        "reason": "" if status == "ok" else "guest hung: watchdog",
        "scenario": {"name": scen, "digest": "d"},
        "plan_env": {"DURATION": 15},
        "kernel": {"hash": "h", "kernel_version": "6.1.192"},
        "qemu": {"accel": {"name": "tcg", "args": ["-accel", "tcg"],
                           "reason": "test"},
                 "qemu_version": "QEMU emulator version 7.2.22",
                 "host_cpu": "Test CPU", "command": "qemu"}})
    return d


def test_finished_means_ok_or_failed_with_the_same_inputs(tmp_path):
    d = fake_run(tmp_path, "baseline", "idle", 1, 50, 100)
    assert matrix.finished(d, "h", "d")
    assert not matrix.finished(d, "other-kernel", "d")
    assert not matrix.finished(d, "h", "other-scenario")
    same = matrix.qemu.Accel("tcg", "x", ["-accel", "tcg"])
    other = matrix.qemu.Accel("tcg", "x", ["-accel", "tcg,thread=multi"])
    assert matrix.finished(d, "h", "d", same)
    assert not matrix.finished(d, "h", "d", other)   # another setting
    assert not matrix.finished(d, "h", "d", same, runner="lava")
    record = store.read_json(d / "run.json")
    store.write_json(d / "run.json", {**record, "lava": {"job": 1}})
    assert matrix.finished(d, "h", "d", same, runner="lava")
    assert not matrix.finished(d, "h", "d", same)    # another runner
    record["status"] = "running"             # killed mid-run
    store.write_json(d / "run.json", record)
    assert not matrix.finished(d, "h", "d")
    (d / "run.json").write_text('{"status": "o')   # half written
    assert not matrix.finished(d, "h", "d")


def test_run_resumes_and_redoes_only_unfinished_cells(tmp_path,
                                                      monkeypatch):
    class V:
        def __init__(self, name):
            self.name = name

    class Built:
        meta = {"hash": "h"}
        image = tmp_path / "bzImage"

    scen = Scenario(name="idle", path=tmp_path / "idle.scenario",
                    description="x", duration=1)
    scen.path.write_text("description = x\nduration = 1\n")
    digest = scen.digest
    done = fake_run(tmp_path / "res", "baseline", "idle", 1, 10, 20)
    record = store.read_json(done / "run.json")
    record["scenario"]["digest"] = digest
    store.write_json(done / "run.json", record)
    fake_run(tmp_path / "res", "baseline", "idle", 2, 10, 20,
             status="running")
    monkeypatch.setattr(matrix.build, "build", lambda v, i, n, force: Built())
    monkeypatch.setattr(matrix.guestbuild, "initrd", lambda v, b: None)
    monkeypatch.setattr(matrix.qemu, "choose_accel",
                        lambda image: matrix.qemu.Accel(
                            "tcg", "test", ["-accel", "tcg"]))
    ran = []

    def fake_cell(c, built, initrd, accel, root):
        ran.append((c.variant.name, c.scenario.name, c.boot))
        return {"status": "ok"}
    monkeypatch.setattr(matrix, "run_cell", fake_cell)
    folders = matrix.run([V("baseline"), V("mine")], [scen], boots=2,
                         root=tmp_path / "res")
    assert len(folders) == 4
    # baseline boot 1 was finished: not redone; boot 2 was cut off: redone
    assert ran == [("mine", "idle", 1), ("baseline", "idle", 2),
                   ("mine", "idle", 2)]


def test_report_from_run_folders(tmp_path):
    root = tmp_path / "res"
    for boot in (1, 2):
        fake_run(root, "baseline", "idle", boot, 50, 300, seed=boot)
        fake_run(root, "better", "idle", boot, 50, 300, seed=10 + boot)
        fake_run(root, "baseline", "long", boot, 1000, 5000, seed=boot)
        fake_run(root, "better", "long", boot, 60, 400, seed=20 + boot)
    fake_run(root, "better", "long", 3, 0, 0, status="failed")
    out = report.write(root, tmp_path / "rep", {"long": "a long handler"},
                       "make lab")
    text = (out / "report.txt").read_text()
    assert all(len(line) <= 72 for line in text.splitlines())
    assert "long: a long handler" in text
    assert re.search(r"Noise floor \(idle scenario, baseline, p99\): 29\d us", text)
    assert "better wins in long" in text
    assert "better idle" not in text.split("Findings")[1]
    assert "guest hung: watchdog" in text          # failed run listed
    assert "block_read_mb_s 123.0" in text
    assert "ksoftirqd 2.0% CPU" in text            # 30 ticks over 15 s
    # 8 of 10 wake-ups in time per boot, half of them moved
    assert "median 4000, p99 4000, moved 50% (16/20)" in text
    a = json.loads((out / "data" / "analysis.json").read_text())
    assert a["cells"]["long/better"]["vs_baseline"]["verdict"] == "win"
    assert a["cells"]["idle/better"]["vs_baseline"]["verdict"] == \
        "no difference"
    assert a["cells"]["long/baseline"]["softirqs"]["BLOCK"] == 700
    assert len(list((out / "data").glob("*-boot*.json"))) == 9
    for png in ("tails.png", "cdf-idle.png", "cdf-long.png"):
        assert (out / png).stat().st_size > 1000
    assert "![p99 and max](tails.png)" in (out / "report.md").read_text()


def test_compare_without_results_is_a_clear_error(tmp_path):
    with pytest.raises(report.LabError, match="no finished runs under"):
        report.write(tmp_path, tmp_path / "rep", {}, "make compare")
