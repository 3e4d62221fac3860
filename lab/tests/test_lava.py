"""End to end through a real LAVA: the instance comes up from Debian's
packages on this machine (lab/run/runners/lava/local.py), the lab submits jobs with
lavacli, LAVA's worker boots them in QEMU, and the lab collects them.
No mocks; nothing here is skipped: a LAVA that cannot come up fails."""
import gzip
import json
import signal
import subprocess
import sys

import pytest

from lab.analyse import results
from lab.base import medium, metrics, paths, stats
from lab.base import store
from lab.run import accelerator
from lab.run.runners.lava import local

# its tests share module fixtures: one worker runs them all
pytestmark = [pytest.mark.guest, pytest.mark.xdist_group("lava")]

SHORT = """description = a 5 ms BLOCK handler every 20 ms, 2 s, for the LAVA test
duration = 2
cyclictest = -t 1 -p 99 -i 1000
module = vector=block spin_us=5000 period_us=20000 cpu=0
probe = -n 10 -c 0 -W 1 -w 2500
probe_module = vector=block spin_us=5000 cpu=0
trace = 100
"""
# Files only one runner writes: LAVA's job definition; the local run's
# scratch disk is removed after the run.
RUNNER_FILES = {"job.yaml"}


@pytest.fixture(scope="module")
def lava(built):
    try:
        yield local.up()
    finally:
        local.down()       # also after a failed `up`: no daemon left


def lab_run(tmp_path, root, scenarios, *extra):
    return [sys.executable, "-m", "lab", "run", "--variants", "baseline",
            "--scenarios", ",".join(str(s) for s in scenarios),
            "--boots", "1", "--results", str(root),
            "--out", str(tmp_path / f"report-{root.name}"), *extra]


def run_folder(root, scen):
    return root / "baseline" / scen / "boot-1"


@pytest.fixture(scope="module")
def through_lava(tmp_path_factory, lava):
    """One cell through LAVA, stopped once while its job runs and then
    resumed; a guest that panics and a job canceled on the server in the
    same matrix; the same cell run locally."""
    tmp = tmp_path_factory.mktemp("lava")
    short = tmp / "short.scenario"
    short.write_text(SHORT)
    panic = tmp / "panic.scenario"
    panic.write_text(SHORT.replace("duration = 2", "duration = 1") +
                     "append = rdinit=/no-init\n")
    canceled = tmp / "canceled.scenario"
    canceled.write_text(SHORT.replace("duration = 2", "duration = 1"))
    root = tmp / "lava"
    cmd = lab_run(tmp, root, [short, panic, canceled], "--runner", "lava",
                  "--lava-identity", lava)
    # Stop the lab as soon as its jobs are on the server.
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    seen = []
    for line in first.stdout:
        seen.append(line)
        if "submitted 3/3" in line:
            first.send_signal(signal.SIGTERM)
            break
    rest, _ = first.communicate(timeout=60)
    stopped = "".join(seen) + rest
    job_ids = {s: store.read_json(run_folder(root, s) / "run.json")
               ["lava"]["job"] for s in ("short", "panic", "canceled")}
    # the last job waits behind the others: cancel it on the server
    subprocess.run(["lavacli", "-i", lava, "jobs", "cancel",
                    str(job_ids["canceled"])], check=True)
    second = subprocess.run(cmd, capture_output=True, text=True,
                            timeout=900)
    local_root = tmp / "local"
    # the worker has the lab's QEMU package (local.up installs it), so
    # the local run of the same cell is in the same setting
    local_run = subprocess.run(lab_run(tmp, local_root, [short]),
                               capture_output=True, text=True, timeout=600)
    return {"root": root, "local": local_root, "stopped": stopped,
            "first_rc": first.returncode, "second": second,
            "local_run": local_run, "job_ids": job_ids}


def test_stopped_lab_follows_its_jobs_again_without_resubmitting(
        through_lava):
    r = through_lava
    assert r["first_rc"] == 130, r["stopped"]
    assert "jobs go on on the LAVA server" in r["stopped"]
    second = r["second"].stdout + r["second"].stderr
    assert r["second"].returncode == 0, second
    assert "3 jobs submitted before; following them again" in second
    assert "submitted 1/" not in second
    for scen, job in r["job_ids"].items():
        record = store.read_json(run_folder(r["root"], scen) / "run.json")
        assert record["lava"]["job"] == job


def test_lava_run_has_the_shape_of_a_local_run(through_lava):
    r = through_lava
    assert r["local_run"].returncode == 0, r["local_run"].stderr
    via_lava = run_folder(r["root"], "short")
    here = run_folder(r["local"], "short")
    lava_record = store.read_json(via_lava / "run.json")
    local_record = store.read_json(here / "run.json")
    assert lava_record["status"] == local_record["status"] == "ok", \
        lava_record["reason"]
    # the same files, the same run.json fields but each runner's own
    files = {p.name for p in via_lava.iterdir()} - RUNNER_FILES
    assert files == {p.name for p in here.iterdir()} - RUNNER_FILES
    assert set(lava_record) - {"lava"} == \
        set(local_record) - {"qemu_exit", "watchdog_fired"}
    # the same plan, each boot with its own random phase
    phase = {"PHASE_SEED", "PHASE_US", "BG_PHASE_US"}

    def plan(record):
        return {k: v for k, v in record["plan_env"].items() if k not in phase}
    assert plan(lava_record) == plan(local_record)
    assert phase <= set(lava_record["plan_env"]) & set(
        local_record["plan_env"])
    assert lava_record["kernel"] == local_record["kernel"]
    assert lava_record["qemu"]["accel"]["args"] == \
        local_record["qemu"]["accel"]["args"]
    # the worker ran the lab's QEMU build, by the version LAVA logged
    build = local_record["qemu"]["accel"]["emulator"]["build"]
    assert lava_record["qemu"]["accel"]["emulator"]["build"] == build
    assert lava_record["qemu"]["qemu_version"].endswith(
        f"+softirqlab.{build}")
    # LAVA's QEMU had the lab's accelerator options and guest parameters
    command = lava_record["qemu"]["command"]
    assert " ".join(local_record["qemu"]["accel"]["args"]) in command
    assert "lab.results=console" in command
    # the compare step reads both alike
    a, b = results.summarize(via_lava), results.summarize(here)
    assert set(a) == set(b)
    assert a["histogram"] and a["traced_histogram"] and a["trace"]
    # 2 s at 1 kHz, less the wake-ups the 5 ms handler swallows (a
    # quarter): as many samples as the local run of the same cell
    samples = [sum(x["histogram"].values()) for x in (a, b)]
    assert samples[0] > 1000 and abs(samples[0] - samples[1]) < \
        0.1 * samples[1], samples


def test_measurements_are_lava_test_cases_matching_the_raw_files(
        through_lava):
    via_lava = run_folder(through_lava["root"], "short")
    record = store.read_json(via_lava / "run.json")
    cases = {c["name"]: c for c in record["lava"]["test_cases"]}
    raw = store.read_json(via_lava / "cyclictest.json")["thread"]["0"]
    assert cases["cyclictest_t0_max"]["measurement"] == raw["max"]
    assert cases["cyclictest_t0_max"]["unit"] == "us"
    assert cases["plan_exit"]["result"] == "pass"
    assert record["lava"]["health"] == "Complete"
    assert record["lava"]["url"].endswith(f"/scheduler/job/"
                                          f"{record['lava']['job']}")


def test_a_guest_panic_is_a_failed_run_with_its_reason(through_lava):
    folder = run_folder(through_lava["root"], "panic")
    record = store.read_json(folder / "run.json")
    assert record["status"] == "failed"
    assert "guest kernel panic" in record["reason"]
    assert "VFS: Unable to mount root fs" in record["reason"]
    assert record["lava"]["health"] == "Incomplete"
    assert "VFS: Unable to mount root fs" in \
        (folder / "console.log").read_text()


def test_a_canceled_job_is_a_failed_run_that_says_so(through_lava):
    record = store.read_json(run_folder(through_lava["root"], "canceled") /
                             "run.json")
    assert record["status"] == "failed"
    assert record["lava"]["health"] == "Canceled"
    assert f"LAVA job {record['lava']['job']} canceled" in record["reason"]


# The same cells through the local runner and through LAVA: the medium
# is the same (the worker runs the lab's QEMU package), so each LAVA
# boot's p99 falls within the local cell's boots widened by what the
# lab's verdicts never count as a difference: the base's spread (its
# interquartile range) or the p99 floor, the larger.  The local boots
# are this run's and those of the three published repeat runs in the same
# QEMU build: idle's p99 has a second mode (51-56 us in 7 of 30 boots of
# runs A-F against 36-40), which five boots miss about one time in
# four; a cold make check once measured 35-38 us locally and 38 and 53
# through LAVA.
# Debian's QEMU on the worker would fail it by two orders of magnitude
# in null-hog (9890-63933 us against 71-78 us, lab/docs/lava.md).
# One LAVA boot a cell: a job there costs about 50 s of the check's
# LAVA worker against about 10 s locally, and the difference this test
# exists for is two orders of magnitude.
SAME_CELLS = ("idle", "null-hog")
LAVA_BOOTS, LOCAL_BOOTS = 1, stats.MIN_BOOTS
PUBLISHED = ("2026-12-06-default-5boots-e", "2026-12-06-default-5boots-f",
             "2026-12-06-default-5boots-g")


def published_boots(scen: str) -> list:
    """Baseline's per-boot p99 of `scen` in the published repeat runs,
    where they ran in the setting and medium local runs use now.  Not
    the QEMU build: patches 0004 and 0005 changed its hash and nothing
    under the options these runs use (lab/docs/medium.md), and matching
    the build left five local boots to bound idle's two modes."""
    here = accelerator.tcg("test")
    want = (here.setting, medium.of(here.as_dict()))
    out = []
    for name in PUBLISHED:
        data = paths.REPO / "reports" / name / "data"
        with gzip.open(data / f"baseline-{scen}-boot1.json.gz") as f:
            ran = json.load(f)["qemu"]["accel"]
        if (ran.get("setting"), medium.of(ran)) == want:
            out += store.read_json(data / "analysis.json")["cells"][
                f"{scen}/baseline"]["per_boot"]["p99"]
    return out


@pytest.fixture(scope="module")
def same_cells(tmp_path_factory, lava):
    tmp = tmp_path_factory.mktemp("same")
    out = {}
    for name, boots, extra in (
            ("lava", LAVA_BOOTS, ["--runner", "lava", "--lava-identity",
                                  lava]),
            ("local", LOCAL_BOOTS, ["--jobs", "2"])):
        cmd = lab_run(tmp, tmp / name, SAME_CELLS, *extra)
        cmd[cmd.index("--boots") + 1] = str(boots)
        r = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=1800)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        out[name] = {scen: [results.summarize(
            run_folder(tmp / name, scen).with_name(f"boot-{b}"))
            ["boot_values"]["p99"] for b in range(1, boots + 1)]
            for scen in SAME_CELLS}
    return out


@pytest.mark.parametrize("scen", SAME_CELLS)
def test_lava_boots_fall_within_the_local_cells_spread(same_cells, scen):
    here = same_cells["local"][scen] + published_boots(scen)
    there = same_cells["lava"][scen]
    noise = max(stats.spread(here), metrics.get("p99").min_effect)
    low, high = min(here) - noise, max(here) + noise
    assert all(low <= p <= high for p in there), (scen, here, there)
