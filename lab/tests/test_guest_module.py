"""The test module and the probe, inside every variant's guest.

Each mechanism test runs in every variant of the default matrix (all
with `make check VARIANTS=all`); what a variant must show is data in its
own folder (variants/<name>/expect, measured thresholds).  A variant
whose file says nothing about a test is skipped with a reason, not
guessed at.
"""
import json

import pytest

from lab.run import boot
from lab.build import guestbuild
from lab.base import paths
from lab.tests.conftest import mechanism_variants

pytestmark = pytest.mark.guest

PLANS = paths.GUEST_DIR / "plans"
NAMES = mechanism_variants()


_INITRDS = {}


def initrd_for(variant, built):
    """The variant's initramfs, built (or found in the cache) once."""
    if variant.name not in _INITRDS:
        _INITRDS[variant.name] = guestbuild.initrd(variant,
                                                   built[variant.name])
    return _INITRDS[variant.name]


def run_in_guest(plan, variant, built, accel, test, env=None, timeout=300):
    run_dir = paths.BUILD_DIR / "test-runs" / test / variant.name
    initrd = initrd_for(variant, built)
    record = boot.run_plan(built[variant.name], PLANS / plan, run_dir,
                           accel, timeout=timeout, initrd=initrd, env=env,
                           append=variant.append)
    assert record["status"] == "ok", record["reason"]
    return run_dir


def probe_summary(variant, built, accel, test, module_args, probe_args):
    run_dir = run_in_guest("probe.sh", variant, built, accel, test,
                           env={"MODULE_ARGS": module_args,
                                "PROBE_ARGS": probe_args})
    lines = (run_dir / "probe.jsonl").read_text().splitlines()
    summary = json.loads(lines[-1])
    assert summary.get("summary") and summary["n"] > 0
    summary["vectors"] = module_vectors(run_dir)
    return summary


def module_vectors(run_dir):
    """softirq_load's per-vector counters: {vector: {counter: value}}."""
    out = {}
    for line in (run_dir / "module-vectors").read_text().splitlines():
        fields = dict(f.split("=", 1) for f in line.split())
        name = fields.pop("name")
        out[name] = {k: int(v) for k, v in fields.items()}
    return out


def by_name(all_variants, name):
    found = [v for v in all_variants if v.name == name]
    if not found:
        pytest.skip(f"variant {name} not in variants/")
    return found[0]


def expected(variant, test):
    """The variant's expectation for `test`, or a skip saying where it
    would be written."""
    want = variant.expect(test)
    if want is None:
        pytest.skip(f"variants/{variant.name}/expect says nothing about "
                    f"{test}")
    return want


@pytest.mark.parametrize("name", NAMES)
def test_module_smoke(name, all_variants, built, accel):
    """Bad parameters refused, every vector runs where asked, 100 load and
    unload cycles without a leak or an oops (guest/plans/module-smoke.sh)."""
    v = by_name(all_variants, name)
    run_dir = run_in_guest("module-smoke.sh", v, built, accel,
                           "module-smoke")
    last = (run_dir / "plan.log").read_text().strip().splitlines()[-1]
    passed, failed = (int(w) for w in last.replace(",", "").split()[::2])
    assert failed == 0 and passed >= 20, last


# A single 5 ms handler on CPU0, CPU1 idle; the probe (SCHED_FIFO 90) last
# ran on CPU0 and its own timer wakes it there 2.5 ms into the handler.
# moved = share of samples that ran on another CPU than CPU0: the
# placement decision made at that wake-up.  stultz-v5 sends the task to
# CPU1; baseline and zijlstra keep it on CPU0, where it waits for the
# rest of the handler (median above 2 ms).
# stultz-v5's latency is not asserted here: single-threaded TCG serves
# the IPI to the idle vCPU late, so a moved task may still wait.  A
# helper thread on CPU1 as waker (-W 1) shows the latency itself (median
# 0.25-0.35 ms in the reports), but only for wake-ups the helper issued
# in time, and TCG let it do so in as few as 12 of 150 samples.
# What each variant must show: variants/<name>/expect, "long-handler".


@pytest.mark.parametrize("vector", ["block", "net_rx", "irq_poll"])
@pytest.mark.parametrize("name", NAMES)
def test_long_handler_wakeup(name, vector, all_variants, built, accel):
    v = by_name(all_variants, name)
    want = expected(v, "long-handler")
    s = probe_summary(v, built, accel, f"long-{vector}",
                      f"vector={vector} spin_us=5000 cpu=0",
                      "-n 150 -c 0 -w 2500 -i 20000")
    moved = s["moved"] / s["n"]
    seen = (f"{name} {vector}: median {s['median_us']:.0f} us, "
            f"moved {moved:.0%}")
    print(seen)         # the measurement, for expect files (pytest -s)
    assert moved <= want.get("moved_max", 1), seen
    assert moved >= want.get("moved_min", 0), seen
    assert s["median_us"] >= want.get("median_min_us", 0), seen
    assert s["median_us"] <= want.get("median_max_us", 1e9), seen


# Five vectors raised in the same hard irq on CPU0, 1 ms each (HI, NET_RX,
# BLOCK, IRQ_POLL, TASKLET in that order: one 5 ms batch).  The probe stays
# pinned to CPU0 (-P), so placement cannot help, and wakes 1.5 ms into the
# batch.  baseline and stultz-v5 run the whole batch inline: the task waits
# about 3.5 ms, and TASKLET never runs in ksoftirqd.  zijlstra stops after
# NET_RX (the task is waiting, and 2 ms are spent) and leaves BLOCK,
# IRQ_POLL and TASKLET to ksoftirqd: that part is asserted.  Its latency is
# not: under single-threaded TCG it varied from boot to boot (medians 803,
# 1551, 3838, 3595, 3092 us), and the module saw 1 ms handler runs take up
# to 12 ms of guest time, i.e. the vCPU was not run; which is the
# emulator, not the kernel (see the fidelity and trace issues).
# What each variant must show: variants/<name>/expect, "short-storm".


@pytest.mark.parametrize("name", NAMES)
def test_short_storm_stops_after_one_vector(name, all_variants, built,
                                              accel):
    v = by_name(all_variants, name)
    want = expected(v, "short-storm")
    s = probe_summary(v, built, accel, "short-storm",
                      "vector=block,net_rx,irq_poll,tasklet,hi spin_us=1000 "
                      "storm_spin_us=1000 cpu=0",
                      "-n 150 -c 0 -P -w 1500 -i 20000")
    tasklet = s["vectors"]["tasklet"]
    deferred = tasklet["ksoftirqd"] / tasklet["runs"]
    seen = (f"{name}: median {s['median_us']} us, "
            f"TASKLET in ksoftirqd {deferred:.0%}")
    print(seen)         # the measurement, for expect files (pytest -s)
    assert s["moved"] == 0, seen
    assert s["median_us"] >= want.get("median_min_us", 0), seen
    assert s["median_us"] <= want.get("median_max_us", 1e9), seen
    assert deferred >= want.get("deferred_min", 0), seen
    assert deferred <= want.get("deferred_max", 1), seen


# ksoftirqd/0 made SCHED_FIFO 50, as audio and RT set-ups do, and a BLOCK
# chain of 20 runs of 200 us every 50 ms on CPU0, otherwise idle: the
# restart limit leaves the second half of each chain to ksoftirqd.
# stultz-v5's patch 3 defers the long vectors whenever rt_task(current),
# and inside ksoftirqd `current` is ksoftirqd itself: a SCHED_FIFO
# ksoftirqd defers BLOCK to itself, runs again at once, and spins until RT
# throttling stops it.  What each variant must show: variants/<name>/
# expect, "fifo-ksoftirqd" (ksoftirqd/0's CPU share and the longest wait
# from raise to handler, each with a _min or _max bound).
@pytest.mark.parametrize("name", NAMES)
def test_fifo_ksoftirqd(name, all_variants, built, accel):
    v = by_name(all_variants, name)
    want = expected(v, "fifo-ksoftirqd")
    duration = 3
    run_dir = paths.BUILD_DIR / "test-runs" / "fifo-ksoftirqd" / v.name
    record = boot.run_plan(built[v.name], PLANS / "fifo-ksoftirqd.sh",
                           run_dir, accel, timeout=300,
                           initrd=initrd_for(v, built), append=v.append,
                           env={"MODULE_ARGS": "vector=block spin_us=200 "
                                "burst=20 period_us=50000 cpu=0",
                                "KSOFTIRQD_PRIO": 50, "DURATION": duration})
    # The kernel's own complaint is part of the result, not noise.
    errors = (run_dir / "console.log").read_text(errors="replace").count(
        "NOHZ tick-stop error")
    assert record["status"] == "ok" or errors, record["reason"]
    assert "SCHED_FIFO" in (run_dir / "ksoftirqd-policy").read_text()
    ns = int((run_dir / "ksoftirqd-ns").read_text().split()[1])
    block = module_vectors(run_dir)["block"]
    got = {"cpu_percent": 100 * ns / 1e9 / duration,
           "delay_us": block["delay_max_ns"] / 1000,
           "missed_percent": 100 * block["missed"] /
           (block["triggers"] + block["missed"]),
           "tick_stop_errors": errors}
    seen = f"{name}: " + ", ".join(f"{k} {x:.0f}" for k, x in got.items())
    print(seen)         # the measurement, for expect files (pytest -s)
    for key, bound in want.items():
        metric, side = key.rsplit("_", 1)
        assert (got[metric] <= bound if side == "max" else
                got[metric] >= bound), f"{key} {bound}: {seen}"


def test_bad_module_parameter_fails_the_run_not_hangs(all_variants, built,
                                                      accel):
    """insmod refuses spin_us=0; the run ends at once, marked failed, with
    the kernel's reason in plan.log."""
    v = by_name(all_variants, "baseline")
    run_dir = paths.BUILD_DIR / "test-runs" / "bad-param" / v.name
    record = boot.run_plan(built[v.name], PLANS / "probe.sh", run_dir,
                           accel, timeout=120,
                           initrd=initrd_for(v, built),
                           env={"MODULE_ARGS": "vector=block spin_us=0",
                                "PROBE_ARGS": "-n 1"})
    assert record["status"] == "failed"
    assert not record["watchdog_fired"]
    assert record["reason"].startswith("plan failed with exit")
    assert "Invalid argument" in record["reason"] or \
        "Invalid" in (run_dir / "plan.log").read_text()
