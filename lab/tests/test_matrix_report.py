"""The matrix resumes where it stopped; the report reads run folders."""
import gzip
import json
import random
import re
from types import SimpleNamespace

import pytest

from lab.base import arches

from lab.run import accelerator, matrix, runfolder
from lab.analyse import analysis, results
from lab.report import publish, text as report_text
from lab.base import store, variants
from lab.base.log import LabError
from lab.run.runners import local
from lab.run.scenario import Scenario

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


def fake_run(root, variant, scen, boot, lo, hi, status="ok", seed=0,
             conf=None, cpus=2):
    d = root / variant / scen / f"boot-{boot}"
    d.mkdir(parents=True)
    rng = random.Random(seed)
    (d / "cyclictest.out").write_text("Thread 0 Interval: 1000\n" + "".join(
        f"{0:8d}:{i:8d}:{rng.randint(lo, hi):8d}\n" for i in range(2000)))
    (d / "cyclictest-start.txt").write_text("0 10\n")
    (d / "cyclictest.json").write_text(json.dumps(
        {"num_threads": 1, "thread": {"0": {"cycles": 2000, "max": hi}}}))
    (d / "affinity.txt").write_text("41 0-1\n42 0-1\n")
    (d / "softirqs-before").write_text(SOFTIRQS.format(t=10, b=0))
    (d / "softirqs-after").write_text(SOFTIRQS.format(t=60, b=700))
    (d / "ksoftirqd-before").write_text("ksoftirqd/0 100000000\n"
                                        "ksoftirqd/1 0\n")
    (d / "ksoftirqd-after").write_text("ksoftirqd/0 400000000\n"
                                       "ksoftirqd/1 0\n")
    for when, sectors in (("before", 0), ("after", 2_402_344)):
        (d / f"net-{when}").write_text(
            f"uptime {10 if when == 'before' else 20}\nrx_packets lo 0\n"
            "Udp: InDatagrams OutDatagrams RcvbufErrors\nUdp: 0 0 0\n"
            f"disk vda 1 0 {sectors} 1 0 0 0 0 0 0 0\n")
    if scen == "long":
        samples = [{"i": i, "latency_us": 300 if i % 2 else 4000,
                    "cpu": i % 2, "prev_cpu": 0,
                    "waker_us": 100 if i < 8 else 3000} for i in range(10)]
        (d / "probe.jsonl").write_text("".join(
            json.dumps(x) + "\n" for x in samples) + json.dumps(
            {"summary": True, "n": 10, "requested": 10, "missed": 0}) +
            "\n")
    store.write_json(d / "run.json", {
        "variant": variant, "status": status, "boot": boot, "cpus": cpus,
        "variant_conf": {"name": variant, **(conf or {"base": "baseline"})},
        "reason": "" if status == "ok" else "guest hung: watchdog",
        "scenario": {"name": scen, "digest": "d"},
        "plan_env": {"DURATION": 2, "CYCLICTEST": "-t 1 -p 99 -i 1000",
                     "PHASE_SEED": seed},
        "kernel": {"hash": "h", "kernel_version": "6.1.192"},
        "qemu": {"accel": {"name": "tcg", "args": ["-accel", "tcg"],
                           "reason": "test"},
                 "qemu_version": "QEMU emulator version 7.2.22",
                 "host_cpu": "Test CPU", "command": "qemu"}})
    return d


def test_finished_means_ok_or_failed_with_the_same_inputs(tmp_path):
    d = fake_run(tmp_path, "baseline", "idle", 1, 50, 100)
    assert runfolder.finished(d, "h", "d")
    assert not runfolder.finished(d, "other-kernel", "d")
    assert not runfolder.finished(d, "h", "other-scenario")
    assert not runfolder.finished(d, "h", "d", plan_sha="another plan")
    same = matrix.qemu.Accel("tcg", "x", ["-accel", "tcg"])
    other = matrix.qemu.Accel("tcg", "x", ["-accel", "tcg,thread=multi"])
    assert runfolder.finished(d, "h", "d", same)
    assert not runfolder.finished(d, "h", "d", other)   # another setting
    assert not runfolder.finished(d, "h", "d", same, runner="lava")
    record = store.read_json(d / "run.json")
    store.write_json(d / "run.json", {**record, "lava": {"job": 1}})
    assert runfolder.finished(d, "h", "d", same, runner="lava")
    assert not runfolder.finished(d, "h", "d", same)    # another runner
    record["status"] = "running"             # killed mid-run
    store.write_json(d / "run.json", record)
    assert not runfolder.finished(d, "h", "d")
    (d / "run.json").write_text('{"status": "o')   # half written
    assert not runfolder.finished(d, "h", "d")


def test_run_resumes_and_redoes_only_unfinished_cells(tmp_path,
                                                      monkeypatch):
    class V:
        explains = True
        arch = arches.X86_64

        def kernel_variant(self):
            return self

        def __init__(self, name):
            self.name = name
            self.append = ""

        def described(self):
            return dict(variants.CONF_DEFAULTS, name=self.name)

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
    record["plan_sha256"] = runfolder.plan_digest(runfolder.PLAN)
    store.write_json(done / "run.json", record)
    fake_run(tmp_path / "res", "baseline", "idle", 2, 10, 20,
             status="running")
    monkeypatch.setattr(matrix.kernel, "build", lambda v, i, n, force: Built())
    monkeypatch.setattr(matrix.guestbuild, "initrd", lambda v, b: None)
    monkeypatch.setattr(local.accelerator, "choose",
                        lambda image: matrix.qemu.Accel(
                            "tcg", "test", ["-accel", "tcg"]))
    ran = []

    def fake_cell(c, built, initrd, accel, root):
        ran.append((c.variant.name, c.scenario.name, c.boot))
        return {"status": "ok"}
    monkeypatch.setattr(local, "run_cell", fake_cell)
    folders = matrix.run([V("baseline"), V("mine")], [scen], boots=2,
                         root=tmp_path / "res")
    assert len(folders) == 4
    # baseline boot 1 was finished: not redone; boot 2 was cut off: redone
    assert ran == [("mine", "idle", 1), ("baseline", "idle", 2),
                   ("mine", "idle", 2)]


@pytest.mark.figures
def test_report_from_run_folders(tmp_path):
    """7 boots a cell: with 5, no lone finding among the report's 8
    printed comparisons could pass Benjamini-Hochberg (q = 8 x 2/252)."""
    root = tmp_path / "res"
    for boot in range(1, 8):
        fake_run(root, "baseline", "idle", boot, 50, 300, seed=boot)
        fake_run(root, "better", "idle", boot, 50, 300, seed=10 + boot)
        fake_run(root, "baseline", "long", boot, 1000, 5000, seed=boot)
        fake_run(root, "better", "long", boot, 60, 400, seed=20 + boot)
    fake_run(root, "better", "long", 8, 0, 0, status="failed")
    pinned = fake_run(root, "better", "idle", 8, 50, 300, seed=99)
    (pinned / "affinity.txt").write_text("41 0\n42 0\n")
    out = publish.write(root, tmp_path / "rep", {"long": "a long handler"},
                       "make lab")
    text = (out / "report.txt").read_text()
    lines = text.splitlines()
    assert all(len(line) <= 72 for line in lines)
    # the summary comes first, at most 10 lines, and says what holds
    assert lines[2] == "Summary"
    summary = lines[3:lines.index("")] if "" in lines[3:] else []
    summary = lines[3:3 + lines[3:].index("")]
    assert 2 <= len(summary) <= 10
    assert "p99 holds (rank test, 5+ boots): better lower " \
           "in long x0.08." in " ".join(x.strip() for x in summary)
    # idle's boots are alike (fake runs of one distribution): shown the
    # same by the equivalence interval, not merely "n.s."
    assert "The same within 20% of the base (equivalence): idle." in \
        " ".join(x.strip() for x in summary)
    assert "long: a long handler" in text
    assert "guest hung: watchdog" in text          # failed run listed
    assert "block_read_mb_s 123" in text
    assert "ksoftirqd_cpu_percent 3" in text   # 0.3 s over 10 s measured
    assert "boots [8] left out: threads not placed as asked" in text
    assert not re.search(r"p = 0(\.0+)?(?![.\d])", text)
    # 8 of 10 wake-ups in time per boot, half of them moved
    assert "median 4000, p99 4000, moved 50% (56/70)" in text
    # published data names no path of this host: run folders relative
    # to the results folder
    for f in (out / "data").iterdir():
        data = gzip.decompress(f.read_bytes()).decode() \
            if f.suffix == ".gz" else f.read_text()
        assert str(tmp_path) not in data, f
    assert '"run":"better/long/boot-1"' in gzip.decompress(
        (out / "data" / "better-long-boot1.json.gz").read_bytes()).decode()
    a = json.loads((out / "data" / "analysis.json").read_text())
    long_vs = a["cells"]["long/better"]["vs_baseline"]
    assert long_vs["p99"]["verdict"] == "lower"
    assert long_vs["p99"]["p"] == pytest.approx(2 / 3432)
    assert long_vs["p99"]["q"] < 0.05 and long_vs["p99"]["shown"] == "lower"
    assert a["family_size"] == 8
    assert "p < 0.001, q = 0.005," in text
    # every comparison of the family is printed in its scenario's block
    # (ksoftirqd's CPU in idle, a scenario without a load generator, was
    # once adjusted for and never shown)
    from lab.analyse import analysis as analysis_
    for cmp_key, c in a["cells"].items():
        scen, var = cmp_key.split("/")
        if "vs_baseline" not in c:
            continue
        start = text.index(f"\n  {scen}:")
        block = text[start:text.find("\n\n", start + 1)]
        for m in analysis_.printed_metrics(a, cmp_key):
            assert m in block and var in block, (scen, var, m)
    assert a["cells"]["idle/better"]["vs_baseline"]["p99"]["verdict"] == \
        "n.s."
    assert a["cells"]["idle/better"]["boots"] == [1, 2, 3, 4, 5, 6, 7]
    assert a["cells"]["long/baseline"]["softirqs"]["BLOCK"] == 700
    # 700 BLOCK runs over the 10 s the counters say the measurement took
    rates = a["cells"]["long/baseline"]["softirqs_per_s"]
    assert set(rates["BLOCK"]) == {70.0} and set(rates["HI"]) == {0.0}
    md = (out / "report.md").read_text()
    assert "## Softirq handler runs per vector (every boot)" in md
    header = next(ln for ln in md.splitlines()
                  if ln.startswith("| variant | boots | ") and "BLOCK" in ln
                  and "inline" not in ln)
    assert "HI" not in header.split("|")      # never ran: left out
    # every per-boot value in analysis.json is in that boot's data file
    data = store.read_json(out / "data" / "better-long-boot3.json.gz")
    assert data["boot_values"]["p99"] == \
        a["cells"]["long/better"]["per_boot"]["p99"][2]
    assert len(list((out / "data").glob("*-boot*.json.gz"))) == 30
    for png in ("tails.png", "survival-idle.png", "survival-long.png",
                "histograms.png"):
        assert (out / png).stat().st_size > 1000
    assert "![p99 and max](tails.png)" in (out / "report.md").read_text()
    assert "![histograms](histograms.png)" in md


def test_withheld_when_the_traces_blame_the_emulator():
    traces = {"busy/better": {"worst": [{"emulator": True},
                                        {"emulator": True},
                                        {"emulator": False}]}}
    why = analysis.emulator_blamed(traces, "busy", ["baseline", "better"])
    assert why.startswith("emulator: 2 of better's 3 worst")
    assert analysis.emulator_blamed(traces, "idle", ["better"]) == ""
    # a trace that does not match cyclictest only loses its causes
    traces["fs/better"] = {"worst": [], "mismatched": [
        "boot 1: 5604 windows against 7741 samples"]}
    assert analysis.emulator_blamed(traces, "fs", ["better"]) == ""
    # both vCPUs busy: the null control's measured latency decides
    null = {"null-hog": [9206, 10929, 10933, 17368, 26022]}
    assert analysis.emulator_blamed(traces, "fs", ["better"], True, null) == \
        "emulator: every vCPU busy, and the null control null-hog (no " \
        "softirq load) has p99 9206-26022 us on baseline"
    assert analysis.emulator_blamed(traces, "fs", ["better"], True,
                                  {"null-hog": [30, 31, 45]}) == ""
    cmp = {"verdict": "lower", "p_lower": 0.004, "p_higher": 1,
           "shift": -100, "spread": 10}
    assert analysis.shown_verdict(cmp, why) == "withheld"
    assert analysis.shown_verdict(cmp, "") == "lower"


def test_compare_without_results_is_a_clear_error(tmp_path):
    with pytest.raises(LabError, match="no finished runs under"):
        publish.write(tmp_path, tmp_path / "rep", {}, "make compare")


def _two_cells(tmp_path):
    class V:
        explains = True
        arch = arches.X86_64

        def kernel_variant(self):
            return self

        def __init__(self, name):
            self.name = name
            self.append = ""

        def described(self):
            return dict(variants.CONF_DEFAULTS, name=self.name)
    scen = Scenario(name="idle", path=tmp_path / "idle.scenario",
                    description="x", duration=1)
    scen.path.write_text("description = x\nduration = 1\n")
    return [matrix.Cell(V(v), scen, 1) for v in ("baseline", "mine")]


def _standin_guest(tmp_path, monkeypatch):
    """run_cell with a stand-in QEMU: 'hang' sleeps past the watchdog,
    anything else writes its run folder's result and exits."""
    exe = tmp_path / "fake-qemu"
    exe.write_text("#!/bin/sh\ncase \"$*\" in\n"
                   "*/mine/*) exec sleep 60 ;;\nesac\nexit 0\n")
    exe.chmod(0o755)
    monkeypatch.setenv("LAB_QEMU", str(exe))

    def run_cell(c, built, initrd, accel, root):
        d = c.folder(root)
        d.mkdir(parents=True, exist_ok=True)
        m = matrix.qemu.Machine(kernel=tmp_path / "k", initrd=tmp_path / "i",
                                share=d, accel=accel)
        o = matrix.qemu.run(m, d / "console.log", timeout=3)
        record = {"status": "ok" if o.status == "exited" else "failed",
                  "reason": o.status}
        store.write_json(d / "run.json", record)
        return record
    monkeypatch.setattr(local, "run_cell", run_cell)


def test_parallel_guests_one_hangs_the_other_finishes(tmp_path,
                                                      monkeypatch):
    import time
    _standin_guest(tmp_path, monkeypatch)
    cells = _two_cells(tmp_path)
    root = tmp_path / "res"
    root.mkdir()
    started = time.monotonic()
    local.run_all(cells, {"baseline": None, "mine": None},
                  {"baseline": None, "mine": None},
                  accelerator.tcg("test"), root, jobs=2)
    took = time.monotonic() - started
    ok = store.read_json(cells[0].folder(root) / "run.json")
    hung = store.read_json(cells[1].folder(root) / "run.json")
    assert ok["status"] == "ok"
    assert hung == {"status": "failed", "reason": "timeout"}
    assert took < 10                     # the watchdog, not 60 s


def test_a_stop_kills_every_parallel_guest_and_records_none(tmp_path,
                                                           monkeypatch):
    import os
    import signal
    import threading
    import time
    (tmp_path / "res").mkdir()
    exe = tmp_path / "fake-qemu"
    exe.write_text("#!/bin/sh\nexec sleep 60\n")
    exe.chmod(0o755)
    monkeypatch.setenv("LAB_QEMU", str(exe))
    recorded = []

    def run_cell(c, built, initrd, accel, root):
        m = matrix.qemu.Machine(kernel=tmp_path / "k", initrd=tmp_path / "i",
                                share=tmp_path, accel=accel)
        o = matrix.qemu.run(m, tmp_path / f"{c.variant.name}.log", 60)
        recorded.append(o)
        return {"status": "ok"}
    monkeypatch.setattr(local, "run_cell", run_cell)
    monkeypatch.setattr(matrix.qemu, "_stopping", threading.Event())
    # a suite started in the background (`make check &`) inherits SIGINT
    # ignored, and Python then raises nothing: put Ctrl-C's handler back
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    # a SIGTERM or Ctrl-C in the main thread, once both guests run (not
    # after a fixed time: on a busy host they may start later)
    def interrupt():
        end = time.monotonic() + 30
        while len(matrix.qemu._running) < 2 and time.monotonic() < end:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=interrupt, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        local.run_all(_two_cells(tmp_path), {"baseline": None,
                                             "mine": None},
                      {"baseline": None, "mine": None},
                      accelerator.tcg("test"), tmp_path / "res", jobs=2)
    signal.signal(signal.SIGINT, old)
    assert time.monotonic() - started < 10
    assert recorded == []                 # no cut-off run judged
    assert not matrix.qemu._running       # no guest left behind


def test_each_generation_is_compared_with_its_own_base(tmp_path):
    root = tmp_path / "res"
    new = {"source": "6.12", "base": "new-base"}
    for boot in range(1, 6):
        fake_run(root, "baseline", "long", boot, 1000, 5000, seed=boot)
        fake_run(root, "new-base", "long", boot, 900, 4500, seed=boot,
                 conf=new)
        fake_run(root, "new-rt", "long", boot, 60, 400, seed=boot,
                 conf=new)
    out = publish.write(root, tmp_path / "rep", {}, "make lab")
    a = json.loads((out / "data" / "analysis.json").read_text())
    assert a["variants"] == ["baseline", "new-base", "new-rt"]
    rt = a["cells"]["long/new-rt"]["vs_baseline"]["p99"]
    assert rt["median"][1] == pytest.approx(_median_p99(a, "new-base"))
    assert "vs_baseline" not in a["cells"]["long/new-base"]
    across = a["cells"]["long/new-base"]["vs_other_generation"]
    assert across["median"][1] == pytest.approx(_median_p99(a, "baseline"))
    text = " ".join((out / "report.txt").read_text().split())
    assert "new-base against baseline, across source generations (not " \
        "like for like): p99" in text
    assert "new-base for new-rt" in text
    assert "(Debian linux-source-6.12) for new-base, new-rt" in text
    assert "p99 n.s.." not in text


def test_a_base_named_for_the_report_replaces_the_variants_own(tmp_path):
    """--base new-rt-plus=new-rt: a proposal on top of the RT kernel is
    compared with it (its own effect), the RT kernel still with its own
    base, and the Rules say which comparison the command named."""
    root = tmp_path / "res"
    new = {"source": "6.12", "base": "new-base"}
    for boot in range(1, 6):
        fake_run(root, "new-base", "long", boot, 900, 4500, seed=boot,
                 conf=new)
        fake_run(root, "new-rt", "long", boot, 60, 400, seed=boot,
                 conf=new)
        fake_run(root, "new-rt-plus", "long", boot, 60, 400,
                 seed=boot + 10, conf=new)
    out = publish.write(root, tmp_path / "rep", {}, "make lab",
                        named_bases={"new-rt-plus": "new-rt"})
    a = json.loads((out / "data" / "analysis.json").read_text())
    assert a["bases"]["new-rt-plus"] == "new-rt"
    assert a["named_bases"] == {"new-rt-plus": "new-rt"}
    plus = a["cells"]["long/new-rt-plus"]["vs_baseline"]["p99"]
    assert plus["median"][1] == pytest.approx(_median_p99(a, "new-rt"))
    rt = a["cells"]["long/new-rt"]["vs_baseline"]["p99"]
    assert rt["median"][1] == pytest.approx(_median_p99(a, "new-base"))
    text = " ".join((out / "report.txt").read_text().split())
    assert "source generation: new-base for new-rt; and, named by the " \
        "report's --base: new-rt for new-rt-plus)" in text


def test_compare_takes_a_base_from_the_command_line(tmp_path, capsys):
    """`compare --base ktimers-rt=preempt-rt-6.12`: the report compares
    ktimers-rt with the RT kernel and its command says so; a base not
    among --variants is refused naming it."""
    from lab.__main__ import main
    root = tmp_path / "res"
    six12 = {"source": "6.12", "base": "mainline-6.12"}
    for boot in range(1, 6):
        for var, lo, hi in (("mainline-6.12", 900, 4500),
                            ("preempt-rt-6.12", 60, 400),
                            ("ktimers-rt", 60, 400)):
            fake_run(root, var, "idle", boot, lo, hi, seed=boot,
                     conf=dict(six12, name=var))
    out = tmp_path / "rep"
    args = ["compare", "--variants", "mainline-6.12,preempt-rt-6.12,"
            "ktimers-rt", "--scenarios", "idle", "--results", str(root),
            "--out", str(out)]
    assert main(args + ["--base", "ktimers-rt=preempt-rt-6.12"]) == 0
    a = json.loads((out / "data" / "analysis.json").read_text())
    assert a["bases"]["ktimers-rt"] == "preempt-rt-6.12"
    assert "--base ktimers-rt=preempt-rt-6.12" in a["command"]
    capsys.readouterr()
    assert main(args + ["--base", "ktimers-rt=debian-rt-6.12"]) == 2
    assert "--base ktimers-rt=debian-rt-6.12: debian-rt-6.12 is not " \
        "among the report's variants" in capsys.readouterr().err


def test_a_busy_scenario_is_judged_by_the_null_control_of_its_size(
        tmp_path):
    """A 4-vCPU busy scenario's verdicts stand or fall with null-hog-4cpu,
    not with the 2-vCPU null-hog, and the report names each size."""
    root = tmp_path / "res"
    for boot in range(1, 6):
        fake_run(root, "baseline", "null-hog", boot, 9000, 20000, seed=boot)
        fake_run(root, "baseline", "null-hog-4cpu", boot, 30, 60, seed=boot,
                 cpus=4)
        for scen, cpus in (("busy", 2), ("busy-4cpu", 4)):
            fake_run(root, "baseline", scen, boot, 1000, 5000, seed=boot,
                     cpus=cpus)
            fake_run(root, "better", scen, boot, 60, 400, seed=boot,
                     cpus=cpus)
    out = publish.write(root, tmp_path / "rep", {}, "make lab",
                       busy={"busy", "busy-4cpu"})
    a = json.loads((out / "data" / "analysis.json").read_text())
    assert a["withheld"]["busy"].startswith(
        "emulator: every vCPU busy, and the null control null-hog ")
    assert "busy-4cpu" not in a["withheld"]
    assert a["cells"]["busy-4cpu/better"]["vs_baseline"]["p99"]["shown"] \
        == "lower"
    text = " ".join((out / "report.txt").read_text().split())
    assert "2 vCPUs and 1024 MB or 4 vCPUs and 1024 MB" in text
    assert "busy-4cpu: 4 vCPUs, 2 s" in text


def test_a_scenario_whose_claim_is_a_worst_case_leads_with_max(tmp_path):
    """The cover letter quotes maxima: its rows, verdicts and summary
    use max; p99 stands beside it, and p99.99, for which a boot of 2000
    samples is too short, is left out rather than shown as a max."""
    root = tmp_path / "res"
    for boot in range(1, 6):
        for scen in ("letter", "idle"):
            fake_run(root, "baseline", scen, boot, 1000, 5000 + boot,
                     seed=boot)
            fake_run(root, "better", scen, boot, 60, 400 + boot, seed=boot)
    out = publish.write(root, tmp_path / "rep", {}, "make lab",
                       lead={"letter": "max"})
    a = json.loads((out / "data" / "analysis.json").read_text())
    assert a["lead"] == {"idle": "p99", "letter": "max"}
    text = (out / "report.txt").read_text()
    flat = " ".join(text.split())
    assert "p99 (max in letter) holds (rank test, 5+ boots): better " \
        "lower in idle x" in flat
    letter = text.split("\n  letter:")[1]
    assert "max per boot (us)" in letter and "max vs base" in letter
    assert "better: max shift" in " ".join(letter.split())
    assert re.search(r"better: p99 \d+ lower x0\.\d\d[.;]", letter)
    # a maximum is one sample: the share over 1 ms stands beside it
    assert re.search(r"better: .*over_1ms 0\.000%", " ".join(letter.split()))
    assert "p99.99" not in letter
    idle = text.split("\n  idle:")[1].split("\n  letter:")[0]
    assert "p99 per boot (us)" in idle


def test_a_lone_finding_among_many_comparisons_is_withheld(tmp_path):
    """5 boots a cell can reach p = 2/252 at best; among the 8 printed
    comparisons of two scenarios that is q = 0.063, over the 0.05 false
    discovery rate: the verdict is withheld, and says why."""
    root = tmp_path / "res"
    for boot in range(1, 6):
        for scen, lo, hi in (("idle", 50, 300), ("long", 1000, 5000)):
            fake_run(root, "baseline", scen, boot, lo, hi, seed=boot)
        fake_run(root, "better", "idle", boot, 50, 300, seed=10 + boot)
        fake_run(root, "better", "long", boot, 60, 400, seed=20 + boot)
    out = publish.write(root, tmp_path / "rep", {}, "make lab")
    a = json.loads((out / "data" / "analysis.json").read_text())
    p99 = a["cells"]["long/better"]["vs_baseline"]["p99"]
    assert p99["verdict"] == "lower" and a["family_size"] == 8
    assert p99["q"] == pytest.approx(8 * 2 / 252)
    assert p99["shown"] == "withheld (FDR)"
    text = " ".join((out / "report.txt").read_text().split())
    assert "Significant alone, not among the report's comparisons " \
        "(withheld (FDR)): long." in text
    assert "better: p99 lower x0.08 alone (p = 0.008, q = 0.063), not " \
        "among its 8 comparisons: more boots would decide it." in text


def _median_p99(a, var):
    return analysis._median(a["cells"][f"long/{var}"]["per_boot"]["p99"])


@pytest.mark.figures
def test_report_when_every_boot_of_a_cell_is_left_out(tmp_path):
    """LAVA's test run: one boot, its thread not set free; the report is
    still written, the cell says why it has no value."""
    root = tmp_path / "res"
    d = fake_run(root, "baseline", "long", 1, 1000, 5000)
    (d / "affinity.txt").write_text("53 0-1\n79 0\n")
    out = publish.write(root, tmp_path / "rep", {}, "make lab")
    text = (out / "report.txt").read_text()
    assert "baseline  no finished run with free threads" in text
    assert (out / "tails.png").stat().st_size > 1000


def test_a_damaged_run_is_left_out_with_its_name(tmp_path, capsys):
    root = tmp_path / "res"
    for boot in (1, 2):
        fake_run(root, "baseline", "idle", boot, 50, 300, seed=boot)
    bad = root / "baseline" / "idle" / "boot-2"
    (bad / "run.json").write_text('{"status": "o')
    publish.write(root, tmp_path / "rep", {}, "make compare")
    err = capsys.readouterr().err
    assert f"{bad}: left out, unreadable" in err
    a = json.loads((tmp_path / "rep" / "data" / "analysis.json").read_text())
    assert a["cells"]["idle/baseline"]["boots"] == [1]
    # a field of the wrong type: that run left out, the report made
    record = store.read_json(root / "baseline" / "idle" / "boot-1" /
                             "run.json")
    store.write_json(bad / "run.json", dict(record, boot=2, qemu="qemu"))
    publish.write(root, tmp_path / "rep", {}, "make compare")
    assert "run.json has a field of the wrong type" in \
        capsys.readouterr().err


@pytest.mark.parametrize("field, value", [
    ("boot", "two"), ("variant", 7), ("variant_conf", None), ("cpus", "2"),
    ("cpus", 0), ("memory_mb", 1024.5), ("status", ["ok"]),
    ("plan_env", "DURATION=2"), ("variant", "")])
def test_a_run_with_a_field_of_the_wrong_type_is_left_out_by_name(
        tmp_path, capsys, field, value):
    """Issue 53: "boot": "two", "variant": 7, "variant_conf": null,
    "cpus": "2" stopped the whole compare with a TypeError beyond the
    run's reading, and "cpus": 0 made a 0-vCPU guest of the report; such
    a run is left out, the file and the field named."""
    root = tmp_path / "res"
    for boot in (1, 2):
        fake_run(root, "baseline", "idle", boot, 50, 300, seed=boot)
    bad = root / "baseline" / "idle" / "boot-2"
    record = store.read_json(bad / "run.json")
    store.write_json(bad / "run.json", dict(record, **{field: value}))
    runs = analysis.load(root)
    assert [r["boot"] for r in runs] == [1]
    assert f"{bad}: left out, unreadable (run.json: {field} is " \
        f"{value!r}, not " in capsys.readouterr().err


def test_a_report_folder_is_replaced_whole(tmp_path, monkeypatch):
    """Issue 53: `compare --out O` twice with different selections left
    the first one's runs and plots in O (replicate then counted both),
    and two compares at once mixed their files.  A report is written
    apart and put in place whole."""
    def plots(runs, a, out):
        # the figures stand in: one file per scenario, as survival-*.png
        for s in a["scenarios"]:
            (out / f"survival-{s}.png").write_text(a["command"])
        return [f"survival-{s}.png" for s in a["scenarios"]]
    monkeypatch.setattr(publish.report_plots, "plots", plots)
    root, out = tmp_path / "res", tmp_path / "rep"
    for scen in ("idle", "fs-noise"):
        fake_run(root, "baseline", scen, 1, 50, 300)
    publish.write(root, out, {}, "first", ["baseline"], ["idle", "fs-noise"])
    assert (out / "survival-fs-noise.png").is_file()
    # its author's: a README, boots set aside, a reply
    (out / "README.md").write_text("how it was made\n")
    (out / "set-aside" / "x-boot1").mkdir(parents=True)
    (out / "set-aside" / "x-boot1" / "console.log").write_text("oops\n")
    (out / "reply.eml").write_text("Subject: Re\n")
    publish.write(root, out, {}, "second", ["baseline"], ["idle"])
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "README.md", "data", "data/analysis.json",
        "data/baseline-idle-boot1.json.gz", "reply.eml", "report.md",
        "report.txt", "set-aside", "set-aside/x-boot1",
        "set-aside/x-boot1/console.log", "survival-idle.png"]
    assert (out / "README.md").read_text() == "how it was made\n"
    assert "second" in (out / "report.md").read_text()
    assert json.loads((out / "data" / "analysis.json").read_text())[
        "command"] == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep", "res"]
    # a folder of other things is not a report to replace
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine\n")
    with pytest.raises(LabError, match="mine: not a report folder"):
        publish.write(root, tmp_path / "mine", {}, "x")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine\n"


def test_a_folder_written_whole_is_one_writers(tmp_path, monkeypatch):
    """Two writers of one folder, the second started before the first
    ended: the folder is the last one's, nothing of the other's in it
    and nothing left beside it; a failed write changes nothing."""
    out = tmp_path / "rep"
    with store.whole_folder(out) as first:
        (first / "a").write_text("1")
        with store.whole_folder(out) as second:
            (second / "b").write_text("2")
        assert [p.name for p in out.iterdir()] == ["b"]
    assert [p.name for p in out.iterdir()] == ["a"]
    assert [p.name for p in tmp_path.iterdir()] == ["rep"]
    # a write that fails on the way leaves the folder as it was
    with pytest.raises(OSError):
        with store.whole_folder(out) as third:
            (third / "c").write_text("3")
            raise OSError(28, "No space left on device")
    assert [p.name for p in out.iterdir()] == ["a"]
    assert [p.name for p in tmp_path.iterdir()] == ["rep"]
    # another writer's folder lands between this one's two renames: it
    # is moved away as the old one was
    rename, raced = store.os.rename, []

    def racing(src, dst):
        rename(src, dst)
        if str(dst).endswith(".old") and not raced:
            raced.append(dst)
            out.mkdir()
            (out / "b").write_text("2")
    monkeypatch.setattr(store.os, "rename", racing)
    with store.whole_folder(out) as fourth:
        (fourth / "d").write_text("4")
    assert raced and [p.name for p in out.iterdir()] == ["d"]
    assert [p.name for p in tmp_path.iterdir()] == ["rep"]


def test_a_long_variant_name_keeps_the_table_aligned():
    cell = {"boots": [1], "pinned_boots": [],
            "per_boot": {"p99": [4215.0, 4652.0, 5008.0, 4147.0, 4173.0],
                         "over_1ms": [0.06], "missed": [0.2]}}
    a = {"variants": ["baseline", "stultz-placement"],
         "cells": {"s/baseline": cell, "s/stultz-placement": cell}}
    rows = report_text._cell_rows(a, "s")
    assert all(len(r) <= 72 for r in rows), rows
    assert rows[1].startswith("  baseline         4215")
    assert rows[2].startswith("  stultz-placement 4215")


def test_a_long_verdict_keeps_every_row_aligned():
    cell = {"boots": [1], "pinned_boots": [],
            "per_boot": {"p99": [381.0, 375.0, 392.0, 383.0, 405.0],
                         "over_1ms": [0.0], "missed": [0.0]}}
    long = {**cell, "vs_baseline": {"p99": {"shown": "withheld (spread)"}}}
    a = {"variants": ["baseline", "stultz-placement"],
         "cells": {"s/baseline": cell, "s/stultz-placement": long}}
    rows = report_text._cell_rows(a, "s")
    assert rows[2].endswith("withheld (spread)"), rows
    assert rows[1].index("0.0%") == rows[2].index("0.0%"), rows


def test_a_long_variant_name_with_a_long_verdict_fits_72_columns(tmp_path):
    root = tmp_path / "res"
    for boot in range(1, 6):
        fake_run(root, "baseline", "long", boot, 1000, 5000, seed=boot)
    fake_run(root, "revert-ksoftirqd", "long", 1, 60, 400, seed=7)
    out = publish.write(root, tmp_path / "rep", {}, "make lab")
    row = next(line for line in (out / "report.txt").read_text()
               .splitlines() if line.startswith("  revert-ksoftirqd "))
    assert row.endswith("too few (1)") and len(row) <= 72


def test_failed_runs_of_many_variants_fit_72_columns(tmp_path):
    """The failed-run count names every variant: with twelve it wraps
    (a report of all variants once stopped on this line)."""
    root = tmp_path / "res"
    names = ["baseline"] + [f"stultz-variant-{i}" for i in range(11)]
    for name in names:
        fake_run(root, name, "long", 1, 60, 400, seed=3)
        fake_run(root, name, "long", 2, 0, 0, status="failed")
    out = publish.write(root, tmp_path / "rep", {}, "make lab")
    text = (out / "report.txt").read_text()
    assert all(len(line) <= 72 for line in text.splitlines())
    assert "stultz-variant-10 1" in text


def test_a_lone_scenario_runs_with_no_other_guest(tmp_path, monkeypatch):
    """With JOBS=2, a scenario that must run alone (a NIC fed from this
    host) never overlaps another guest; the others still run two at a
    time."""
    import threading
    import time
    from dataclasses import replace
    base = _two_cells(tmp_path)[0]
    fed = replace(base.scenario, name="nic", nic=1000)
    cells = [matrix.Cell(base.variant, s, b) for b in (1, 2)
             for s in (base.scenario, fed, base.scenario)]
    lock, running, seen = threading.Lock(), [], []

    def run_cell(c, built, initrd, accel, root):
        with lock:
            running.append(c.scenario.name)
            seen.append(list(running))
        time.sleep(0.2)
        with lock:
            running.remove(c.scenario.name)
        return {"status": "ok"}
    monkeypatch.setattr(local, "run_cell", run_cell)
    local.run_all(cells, {"baseline": None}, {"baseline": None},
                  accelerator.tcg("test"), tmp_path, jobs=2)
    assert len(seen) == len(cells)
    assert all(s == ["nic"] for s in seen if "nic" in s), seen
    assert any(len(s) == 2 for s in seen), seen


def test_a_long_summary_counts_instead_of_listing():
    """With many kernels the holding differences become a count, so the
    summary keeps its 10 lines."""
    names = [f"variant-{i:02d}" for i in range(12)]
    cells = {}
    for i, v in enumerate(names):
        for scen in ("nic-rx", "nic-rx-overload"):
            shown = "lower" if i % 2 else "higher"
            cells[f"{scen}/{v}"] = {"boots": [1, 2, 3, 4, 5], "vs_baseline": {
                "p99": {"shown": shown, "ratio": 0.5 if i % 2 else 1.6}}}
    a = {"variants": names, "scenarios": ["nic-rx", "nic-rx-overload"],
         "cells": cells, "withheld": {}, "bases": {}}
    run = {"accel": "tcg", "qemu": {"accel": {"name": "icount-3-slice20",
                                              "args": []}}}
    out = report_text._summary([run], a)
    assert len(out) <= report_text.SUMMARY_LINES
    assert "in 24 comparisons, marked lower or higher below." in " ".join(
        x.strip() for x in out), out


def test_the_setup_names_each_kernels_preemption_from_its_banner(
        tmp_path):
    banner = ("[    0.000000] Linux version 6.12.118-{v} (lab@x) (gcc 12.2.0)"
              " #1 SMP {model} 2000-01-01\n")
    runs = []
    for v, model in (("mainline-6.12", "PREEMPT"),
                     ("preempt-rt-6.12", "PREEMPT_RT"),
                     ("zijlstra-6.12", "PREEMPT")):
        d = tmp_path / v
        d.mkdir()
        (d / "console.log").write_text("early\n" + banner.format(
            v=v, model=model))
        runs.append({"variant": v, "preemption": results.preemption(d)})
    assert report_text.kernel_setup(runs[:1]) == \
        "HZ=250, full preemption (CONFIG_PREEMPT)"
    assert report_text.kernel_setup(runs) == \
        "HZ=250, full preemption (CONFIG_PREEMPT), PREEMPT_RT for " \
        "preempt-rt-6.12"
    # a run without a banner (failed, or LAVA's) does not hide the others'
    missing = [{"variant": "mainline-6.12", "preemption": None}]
    assert report_text.kernel_setup(missing + runs) == report_text.kernel_setup(runs)
    assert report_text.kernel_setup(missing) == "HZ=250, not in the boot log"
    (tmp_path / "console.log").write_text(
        "Linux version 6.1.192-x (lab@x) (gcc 12.2.0) #1 SMP 2000-01-01\n")
    assert results.preemption(tmp_path) == ""
    assert results.preemption(tmp_path / "none") is None


def test_a_traced_boot_has_room_for_a_slow_trace_phase(tmp_path):
    """zijlstra-6.12's traced nic-rx boots took up to 145 s of host time
    against a watchdog of 144 s (3 x 28 s expected + 60)."""
    nic = Scenario(name="nic-rx", path=tmp_path / "nic-rx.scenario",
                   description="x", duration=10, trace=100, nic=0)
    v = SimpleNamespace(name="zijlstra-6.12", append="", explains=True)
    traced, untraced = (matrix.Cell(v, nic, b) for b in (1, 2))
    assert traced.traced and not untraced.traced
    assert untraced.watchdog_seconds() == 3 * (10 + 8) + 60
    assert traced.watchdog_seconds() == 3 * (2 * 10 + 8) + 60 + 300
    # a 60 s scenario traced for 10 s expects 10 s more, not 60
    long = Scenario(name="qais", path=tmp_path / "qais.scenario",
                    description="x", duration=60, trace=100,
                    trace_duration=10)
    assert matrix.Cell(v, long, 1).expected_seconds() == 60 + 10 + 8


def test_a_summary_with_every_kind_of_line_and_many_repeats_fits():
    """Findings, n.s., unresolved, predictions and five earlier repeats
    (run K of the default matrix) still fit in the summary's lines."""
    names = ["base", *(f"v{i}" for i in range(5))]
    cells = {}
    for i, v in enumerate(names[1:]):
        for j, scen in enumerate(f"scen-{k}" for k in range(12)):
            shown = ["lower", "n.s.", "n.s.", "unresolved"][(i + j) % 4]
            cells[f"{scen}/{v}"] = {"boots": [1] * (5 + 5 * (j == 0)),
                                    "vs_baseline": {"p99": {
                                        "shown": shown, "ratio": 0.5}},
                                    "prediction": {"outcome": "consistent"}}
    a = {"variants": names, "scenarios": [f"scen-{k}" for k in range(12)],
         "cells": cells, "withheld": {}, "bases": {v: "base" for v in names},
         "replication": {"differ": [], "reports": [
             f"2026-12-06-run-{x}" for x in "abcde"]}}
    run = {"accel": "tcg", "qemu": {"accel": {"name": "icount-3-slice20",
                                              "args": []}}}
    out = " ".join(x.strip() for x in report_text._summary([run], a))
    assert "Unresolved" in out
    assert "Every finding as in the 5 earlier runs of this plan" in out


def test_ksoftirqds_cpu_is_printed_where_it_is_judged():
    """In a scenario whose load has no counters of its own (idle,
    null-hog), ksoftirqd's CPU is still a comparison of the family: its
    row is printed, or a report would adjust for more comparisons than
    it shows."""
    from lab.report import text as report_text
    cmp = {"verdict": "higher", "shown": "higher", "ratio": 3.0,
           "median": [0.3, 0.1]}
    a = {"variants": ["baseline", "rt"], "withheld": {},
         "cells": {"idle/baseline": {"cost": {"ksoftirqd_cpu_percent":
                                              [0.1] * 5}},
                   "idle/rt": {"cost": {"ksoftirqd_cpu_percent": [0.3] * 5},
                               "vs_baseline": {"ksoftirqd_cpu_percent":
                                               cmp}}}}
    rows = "\n".join(report_text._cost_rows(a, "idle"))
    assert "rt: ksoftirqd_cpu_percent 0.3 higher x3.00" in rows


def test_a_long_variant_name_keeps_the_cell_header_in_width():
    """A name as long as zijlstra-no-net-break's narrows the values
    column, in the header as in the rows: each line in width, and the
    header's columns over the rows' values."""
    from lab.report import text as report_text
    a = {"variants": ["baseline", "zijlstra-no-net-break"], "cells": {
        "s/baseline": {"boots": [1], "per_boot": {
            "max": [9014.0], "over_1ms": [0.1], "missed": [0.3]},
            "vs_baseline": {}, "pinned_boots": []}},
         "lead": {"s": "max"}}
    rows = report_text._cell_rows(a, "s")
    assert all(len(r) <= report_text.WIDTH for r in rows), rows
    assert rows[0].index(">1ms") + 4 == rows[1].index("10.0%") + 5
    assert rows[2].endswith("no finished run with free threads")


def test_a_scenario_given_by_path_is_judged_by_its_own_declarations(
        tmp_path):
    """Issue 61: `--scenarios /some/where/mine.scenario` with `lead =
    max` led with p99 and lost its description: the facts were read only
    from common/scenarios/."""
    from lab.__main__ import main
    root = tmp_path / "res"
    six12 = {"source": "6.12", "base": "mainline-6.12"}
    for boot in range(1, 6):
        for var, lo, hi in (("mainline-6.12", 900, 4500),
                            ("preempt-rt-6.12", 60, 400)):
            fake_run(root, var, "mine", boot, lo, hi, seed=boot,
                     conf=dict(six12, name=var))
    mine = tmp_path / "else" / "mine.scenario"
    mine.parent.mkdir()
    mine.write_text("description = my own case\nduration = 10\n"
                    "lead = max\n")
    out = tmp_path / "rep"
    assert main(["compare", "--variants", "mainline-6.12,preempt-rt-6.12",
                 "--scenarios", str(mine), "--results", str(root),
                 "--out", str(out)]) == 0
    a = json.loads((out / "data" / "analysis.json").read_text())
    assert a["lead"]["mine"] == "max"
    assert "my own case" in (out / "report.txt").read_text()


@pytest.mark.parametrize("edit", [{"boot": 5}, {"variant": "stultz-v5"}])
def test_a_run_json_that_disagrees_with_its_folder_is_refused(tmp_path,
                                                               edit):
    """Issue 61: a run.json saying boot 5 inside boot-2/, or variant
    stultz-v5 inside baseline/, was taken: boots [1,3,4,5,5] and a
    verdict changed.  The comparison refuses, naming the run; a re-run
    redoes it."""
    root = tmp_path / "res"
    for boot in (1, 2):
        fake_run(root, "baseline", "long", boot, 1000, 5000, seed=boot)
    f = root / "baseline" / "long" / "boot-2" / "run.json"
    record = store.read_json(f)
    store.write_json(f, {**record, **edit})
    with pytest.raises(LabError, match=r"boot-2/run.json says .* not the "
                       r"folder it sits in"):
        analysis.load(root)
    assert not runfolder.finished(f.parent, record["kernel"]["hash"],
                                  record["scenario"]["digest"])


def test_a_killed_writers_debris_is_cleared_at_the_next_write(tmp_path):
    """Issue 61: `.new` folders stayed in reports/ for good after a
    SIGKILL, and a `.old` one after writing to a symlinked report folder
    (whose link became a real folder)."""
    out = tmp_path / "reports" / "r"
    dead = 2 ** 22 + 12345           # above pid_max's default: no process
    (tmp_path / "reports" / f".r.{dead}.abcd0123.new").mkdir(parents=True)
    with store.whole_folder(out) as new:
        (new / "a").write_text("1")
    assert sorted(p.name for p in out.parent.iterdir()) == ["r"]
    # killed between its renames: the old report is put back
    out.rename(tmp_path / "reports" / f".r.{dead}.abcd0123.old")
    with store.whole_folder(out.with_name("other")) as new:
        pass
    with store.whole_folder(out) as new:
        assert (out / "a").read_text() == "1"       # back before the write
        (new / "b").write_text("2")
    assert sorted(p.name for p in out.parent.iterdir()) == ["other", "r"]
    real = tmp_path / "elsewhere"
    real.mkdir()
    link = tmp_path / "reports" / "link"
    link.symlink_to(real)
    with store.whole_folder(link) as new:
        (new / "c").write_text("3")
    assert link.is_symlink() and (link / "c").read_text() == "3"
    assert not [p for p in tmp_path.rglob(".*") if p.name.startswith(".")]
