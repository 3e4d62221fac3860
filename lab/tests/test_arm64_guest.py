"""The arm64 guest with CPUs of different sizes, booted: the capacities
reach the kernel, the lab's QEMU runs each vCPU at its size in virtual
time (common/qemu/0004), a guest where either did not take fails its
run, and stultz-v5's placement on it chooses among the CPUs that fit.

Builds baseline-arm64 and stultz-v5-arm64 (cross-built, one shared 6.1
tree with the x86 kernels) and the lab's qemu-system-aarch64."""
from pathlib import Path

import pytest

from lab.analyse import analysis, results
from lab.base import paths, variants
from lab.build import guestbuild, kernel
from lab.run import boot, matrix, qemu, runfolder, scenario

pytestmark = [pytest.mark.guest, pytest.mark.xdist_group("arm64")]

VARIANTS = ("baseline-arm64", "stultz-v5-arm64")
SCENARIOS = ("idle-phone4", "phone4-long-block", "phone4-long-block-android",
             "phone4-prime-long-block")
ROOT = paths.BUILD_DIR / "test-runs" / "arm64"
TOLERANCE = 0.05        # guest/bin/lab-capacities's


@pytest.fixture(scope="module")
def runs():
    """One boot of each cell: {(variant, scenario): its run folder}."""
    chosen = variants.select(",".join(VARIANTS))
    folders = matrix.run(chosen, scenario.select(",".join(SCENARIOS)), 1,
                         ROOT)
    return {(f.parts[-3], f.parts[-2]): f for f in folders}


def ok(folder: Path) -> dict:
    r = results.summarize(folder)
    assert r["status"] == "ok", r["reason"]
    r["probe"] = results.probe(folder)
    return r


def test_the_kernel_and_the_clock_see_the_declared_sizes(runs):
    folder = runs[("baseline-arm64", "idle-phone4")]
    ok(folder)
    declared = scenario.select("idle-phone4")[0].capacities
    lines = [line.split() for line in
             (folder / "capacities").read_text().splitlines()]
    assert [int(cap) for _, cap, _ in lines] == \
        [c * 1024 // max(declared) for c in declared]
    rates = [float(rate) for _, _, rate in lines]
    for (cpu, cap, _), rate in zip(lines, rates):
        ratio = rate / max(rates) * 1024
        assert abs(ratio - int(cap)) <= TOLERANCE * int(cap), (cpu, ratio)


def _one_boot(variant: str, test: str, machine_capacities: tuple):
    """idle-phone4's plan on `variant`, the guest given
    `machine_capacities` (the plan still checks the scenario's)."""
    v = variants.select(variant)[0]
    s = scenario.select("idle-phone4")[0]
    built = kernel.build(v)
    run_dir = ROOT / "fails" / test
    return boot.run_plan(built, runfolder.PLAN, run_dir,
                         matrix.tcg_for([v]), timeout=300, cpus=s.cpus,
                         initrd=guestbuild.initrd(v, built),
                         env=s.plan_env(), capacities=machine_capacities)


def test_a_guest_whose_device_tree_lacks_the_sizes_fails_its_run(runs):
    record = _one_boot("baseline-arm64", "no-device-tree", ())
    assert record["status"] == "failed"
    assert "did not take: cpu0 has capacity 1024 (declared 290)" in \
        record["reason"]


def test_a_guest_whose_vcpus_all_run_at_full_speed_fails_its_run(
        runs, monkeypatch):
    monkeypatch.setattr(qemu, "with_speeds", lambda args, caps, speedup: args)
    record = _one_boot("baseline-arm64", "no-speeds",
                       scenario.select("idle-phone4")[0].capacities)
    assert record["status"] == "failed"
    assert "cpu0 runs at 1024/1024 (declared 290)" in record["reason"]


def placement(runs, variant, scen) -> dict:
    r = ok(runs[(variant, scen)])
    return analysis.probe_summary([r])


def test_stultz_places_the_rt_task_on_the_big_cpu_the_softirq_left(runs):
    """The kernel's RT clamp (1024): only big CPUs fit.  The probe's task
    last ran on big CPU3, inside the handler: baseline wakes it there,
    stultz-v5 on CPU2, the other big CPU, never on a little one."""
    base = placement(runs, "baseline-arm64", "phone4-long-block")
    mine = placement(runs, "stultz-v5-arm64", "phone4-long-block")
    assert base["moved"] <= 0.1 and mine["moved"] >= 0.9
    assert mine["placement"]["share"]["big"] == 1
    assert mine["placement"]["too_small"] == 0
    assert mine["median_us"] < base["median_us"] / 2


def test_with_androids_clamp_stultz_uses_the_little_cpus_too(runs):
    mine = placement(runs, "stultz-v5-arm64", "phone4-long-block-android")
    assert mine["placement"]["rt_clamp"] == 0
    assert mine["moved"] >= 0.9
    assert mine["placement"]["share"]["little"] > 0


def test_where_only_the_busy_cpu_fits_stultz_keeps_the_task_there(runs):
    """The prime CPU3 is the one RT tasks fit and the one busy with
    softirqs: select_task_rq_rt() finds no CPU that fits and is free,
    and stays (it never puts the task on a CPU too small for it)."""
    mine = placement(runs, "stultz-v5-arm64", "phone4-prime-long-block")
    assert mine["moved"] <= 0.1
    assert mine["placement"]["too_small"] == 0
