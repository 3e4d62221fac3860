"""Faults provoked for real, with real guests: a kernel panic, a lab
killed mid-run, a disk that fills during a run.  Each checks that the
failure is reported plainly and that no finished run is lost or redone;
a hung guest says what its vCPUs were doing."""
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lab.run import boot, matrix, scenario
from lab.base import paths, store, variants
from lab.base.log import LabError

pytestmark = pytest.mark.guest

SHORT = "description = two seconds of cyclictest, for fault tests\n" \
        "duration = 2\n"


def short_scenario(tmp_path, name="short", extra=""):
    path = tmp_path / f"{name}.scenario"
    path.write_text(SHORT + extra)
    return scenario.parse(path)


def status(root, scen, boot):
    return store.read_json(root / "baseline" / scen / f"boot-{boot}" /
                           "run.json")["status"]


def wait_for(predicate, seconds, what):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {seconds} s")


def qemu_pids(folder: Path) -> list:
    """QEMU processes whose command line names `folder`."""
    pids = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (d / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "qemu-system" in cmd and str(folder) in cmd:
            pids.append(int(d.name))
    return pids


def test_guest_panic_fails_that_run_and_the_matrix_goes_on(tmp_path,
                                                           built):
    # No init in the initramfs: the kernel falls back to mounting a root
    # it does not have and panics - a real panic from the guest kernel.
    panic = short_scenario(tmp_path, "panic", "append = rdinit=/no-init\n")
    short = short_scenario(tmp_path)
    root = tmp_path / "results"
    matrix.run(variants.select("baseline"), [panic, short], 1, root)
    record = store.read_json(root / "baseline/panic/boot-1/run.json")
    assert record["status"] == "failed"
    assert "guest kernel panic" in record["reason"]
    assert "VFS: Unable to mount root fs" in record["reason"]
    assert not record["watchdog_fired"] and record["seconds"] < 60
    assert (root / "baseline/panic/boot-1/console.log").stat().st_size > 0
    assert status(root, "short", 1) == "ok"


def test_hung_guest_is_read_before_it_is_killed(tmp_path, built, accel):
    # A plan that never ends: a shell spinning in user mode on CPU1, CPU0
    # idle.  The watchdog reads each vCPU through QEMU's monitor first.
    plan = tmp_path / "spin.sh"
    plan.write_text("taskset -c 1 sh -c 'while :; do :; done'\n")
    run_dir = tmp_path / "run"
    record = boot.run_plan(built["baseline"], plan, run_dir, accel,
                           timeout=30)
    assert record["watchdog_fired"]
    assert "vCPUs when the watchdog fired: 0: halted (idle)" in \
        record["reason"]
    seen = (run_dir / "hang-cpus.txt").read_text()
    # samples are 50 ms of host time apart, so a slow-to-emulate
    # instruction weighs by its host time: on a loaded host the spinning
    # vCPU was caught in the timer interrupt's HPET read in 11 of 20
    # (user mode 8/20); it must be running, and seen in user mode
    cpu1 = re.search(r"^vCPU 1: (.*)$", seen, re.M)
    assert cpu1 and "halted" not in cpu1[1], seen
    assert re.search(r"user mode ([5-9]|1[0-9]|20)/20", cpu1[1]), seen
    assert "RIP=" in seen


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL],
                         ids=["SIGTERM", "SIGKILL"])
def test_killed_lab_resumes_without_losing_or_redoing_runs(tmp_path, built,
                                                           sig):
    scen = tmp_path / "short.scenario"
    scen.write_text(SHORT)
    root = tmp_path / "results"
    cmd = [sys.executable, "-m", "lab", "run", "--variants", "baseline",
           "--scenarios", str(scen), "--boots", "2", "--jobs", "1",
           "--results", str(root),
           "--out", str(tmp_path / "report")]
    first = root / "baseline/short/boot-1/run.json"
    second = root / "baseline/short/boot-2/run.json"
    lab = subprocess.Popen(cmd, cwd=paths.REPO, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: second.is_file(), 120, "second run started")
        wait_for(lambda: qemu_pids(second.parent), 10, "its QEMU started")
        lab.send_signal(sig)
        out, _ = lab.communicate(timeout=30)
    finally:
        if lab.poll() is None:
            lab.kill()
    assert lab.returncode == (130 if sig == signal.SIGTERM else -9), out
    if sig == signal.SIGTERM:
        assert "stopped after 1 of 2 runs; run again to resume" in out
    # The guest dies with the lab, even when the lab gets no chance to act.
    wait_for(lambda: not qemu_pids(second.parent), 5, "guest gone")
    assert status(root, "short", 1) == "ok"
    assert status(root, "short", 2) == "running"
    assert not list(root.rglob("run.json.tmp"))
    first_bytes = first.read_bytes()

    again = subprocess.run(cmd, cwd=paths.REPO, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 of 2 runs already done; resuming" in again.stdout
    assert first.read_bytes() == first_bytes, "a finished run was redone"
    assert status(root, "short", 2) == "ok"


@pytest.fixture
def small_disk(tmp_path):
    """A 64 MB file system of its own, to fill without harming the host."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs",
                    str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(folder: Path) -> Path:
    filler = folder / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * (1 << 20))
                f.flush()
        except OSError:
            pass
    return filler


def test_disk_filling_during_a_run_fails_it_cleanly(small_disk, tmp_path,
                                                    built):
    short = short_scenario(tmp_path)
    root = small_disk / "results"
    baseline = variants.select("baseline")
    matrix.run(baseline, [short], 1, root)
    first = root / "baseline/short/boot-1/run.json"
    first_bytes = first.read_bytes()

    failure = []

    def second_boot():
        try:
            matrix.run(baseline, [short], 2, root)
        except LabError as e:
            failure.append(str(e))

    t = threading.Thread(target=second_boot)
    t.start()
    wait_for(lambda: (root / "baseline/short/boot-2/run.json").is_file(),
             60, "second run started")
    filler = fill(small_disk)
    t.join(timeout=180)
    assert not t.is_alive()
    assert failure and failure[0].startswith("disk full while running"), \
        failure
    assert "finished runs are intact" in failure[0]
    assert first.read_bytes() == first_bytes
    assert status(root, "short", 2) == "running"     # will be redone
    assert not list(root.rglob("run.json.tmp"))

    # Still full: refused before the guest starts, saying what to do.
    with pytest.raises(LabError, match=r"disk full: \d+ MB free in .*"
                                       r"needs 32 MB.*resume"):
        matrix.run(baseline, [short], 2, root)

    os.unlink(filler)
    matrix.run(baseline, [short], 2, root)
    assert first.read_bytes() == first_bytes
    assert status(root, "short", 2) == "ok"
