"""The test module and the probe, inside every variant's guest.

Each mechanism test states beside it what each variant should do, with
thresholds set from measurements under single-threaded TCG (the lab's
default).  A variant with no expectation written here is skipped with a
reason, not guessed at.
"""
import json

import pytest

from lab import boot, guestbuild, paths

PLANS = paths.GUEST_DIR / "plans"
NAMES = ["baseline", "stultz-v5", "zijlstra"]


def run_in_guest(plan, variant, built, accel, test, env=None, timeout=300):
    run_dir = paths.BUILD_DIR / "test-runs" / test / variant.name
    initrd = guestbuild.initrd(variant, built[variant.name])
    record = boot.run_plan(built[variant.name], PLANS / plan, run_dir,
                           accel, timeout=timeout, initrd=initrd, env=env)
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
    summary["latencies_us"] = [json.loads(line)["latency_us"]
                               for line in lines[:-1]]
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
# ran on CPU0 and wakes 1.25 ms into the handler.  It is woken from a helper
# thread on CPU1 (-W 1): with its own timer on CPU0, single-threaded TCG
# delivered the IPI to the idle vCPU late, which blurred stultz-v5's
# latency (0.2 to 3.5 ms between boots) though the task was moved.
# moved = share of samples that ran on another CPU than CPU0.
LONG_HANDLER = {
    "baseline": {"moved_max": 0.05, "median_min_us": 2000},
    "stultz-v5": {"moved_min": 0.80, "median_max_us": 1000},
    "zijlstra": {"moved_max": 0.05, "median_min_us": 2000},
}


@pytest.mark.parametrize("vector", ["block", "net_rx", "irq_poll"])
@pytest.mark.parametrize("name", NAMES)
def test_long_handler_wakeup(name, vector, all_variants, built, accel):
    v = by_name(all_variants, name)
    want = LONG_HANDLER[name]
    s = probe_summary(v, built, accel, f"long-{vector}",
                      f"vector={vector} spin_us=5000 cpu=0",
                      "-n 150 -c 0 -W 1 -i 20000")
    moved = s["moved"] / s["n"]
    seen = f"{name} {vector}: median {s['median_us']} us, moved {moved:.0%}"
    assert moved <= want.get("moved_max", 1), seen
    assert moved >= want.get("moved_min", 0), seen
    assert s["median_us"] >= want.get("median_min_us", 0), seen
    assert s["median_us"] <= want.get("median_max_us", 1e9), seen


# Five vectors raised in the same hard irq on CPU0, 1 ms each (HI, NET_RX,
# BLOCK, IRQ_POLL, TASKLET in that order: one 5 ms batch).  The probe stays
# pinned to CPU0 (-P), so placement cannot help, and wakes 1.5 ms into the
# batch.  baseline and stultz-v5 finish the batch (about 3.5 ms more);
# zijlstra stops after the vector that is running (about 0.5 ms more) and
# leaves BLOCK, IRQ_POLL and TASKLET to ksoftirqd.  Under TCG the wake-up
# itself sometimes comes late (after the next vector), so zijlstra's
# latencies are bimodal; the test counts samples under 2 ms ("fast").
# Measured (150 samples per boot): baseline median 3780 and 3865 us, none
# fast; stultz-v5 3779 and 3939 us, none fast; zijlstra 803 and 1727 us,
# about 60% fast; TASKLET in ksoftirqd: 0%, 0%, 99-100%.
SHORT_STORM = {
    "baseline": {"fast_max": 0.05, "deferred_max": 0.1},
    "stultz-v5": {"fast_max": 0.05, "deferred_max": 0.1},
    "zijlstra": {"fast_min": 0.4, "deferred_min": 0.8},
}


@pytest.mark.parametrize("name", NAMES)
def test_short_storm_is_bounded_by_one_vector(name, all_variants, built,
                                              accel):
    v = by_name(all_variants, name)
    want = SHORT_STORM[name]
    s = probe_summary(v, built, accel, "short-storm",
                      "vector=block,net_rx,irq_poll,tasklet,hi spin_us=1000 "
                      "storm_spin_us=1000 cpu=0",
                      "-n 150 -c 0 -P -w 1500 -i 20000")
    tasklet = s["vectors"]["tasklet"]
    deferred = tasklet["ksoftirqd"] / tasklet["runs"]
    lat = s["latencies_us"]
    fast = sum(x < 2000 for x in lat) / len(lat)
    seen = (f"{name}: median {s['median_us']} us, under 2 ms {fast:.0%}, "
            f"TASKLET in ksoftirqd {deferred:.0%}")
    assert s["moved"] == 0, seen
    assert fast >= want.get("fast_min", 0), seen
    assert fast <= want.get("fast_max", 1), seen
    assert deferred >= want.get("deferred_min", 0), seen
    assert deferred <= want.get("deferred_max", 1), seen
