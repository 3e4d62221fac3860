"""Boot tests: every guest variant builds, boots with 2 vCPUs, and is
itself.  The guest variants are the default matrix's (`make check`), or
every variant (`make check-all`: conftest.guest_variants); every
variant's series is checked without a build in test_variant_series.py.

Slow (cold: one kernel build per variant, about 8 minutes each on 2
cores; warm: seconds per boot).  Marked `guest`: they run after the
unit tests, and `make test` leaves them out.
"""
import contextlib
import json
import time

import pytest

from lab.run import boot, health
from lab.build import cachelock, kernel
from lab.base import kconfig, paths, store, variants
from lab.base.log import LabError
from lab.tests.conftest import guest_variants, make_variant

# its tests share module fixtures: one worker runs them all
pytestmark = [pytest.mark.guest, pytest.mark.xdist_group("boot_variants")]

CPUS = 2
ALL = guest_variants()


BY_NAME = {v.name: v for v in ALL}


@pytest.fixture(scope="module")
def health_runs(built, accel):
    runs = {}
    for name, b in built.items():
        run_dir = paths.BUILD_DIR / "test-runs" / "health" / name
        record = boot.run_plan(b, health.PLAN, run_dir, accel,
                               timeout=180, cpus=CPUS,
                               append=BY_NAME[name].append,
                               env=BY_NAME[name].plan_env())
        runs[name] = (run_dir, record)
    return runs


@pytest.mark.parametrize("name", [v.name for v in ALL])
def test_variant_boots_and_is_itself(name, built, health_runs):
    run_dir, record = health_runs[name]
    assert health.check(built[name], run_dir, record, CPUS,
                        BY_NAME[name]) == []
    assert (run_dir / "kernel-release").read_text().strip() == \
        built[name].meta["release"]
    assert (run_dir / "cpus-online").read_text().strip() == "0-1"
    # CPU1 comes online with the boot CPU's delay loop (lpj=), not after
    # seconds of a calibration that fails under icount
    assert "calibrate_delay_direct() failed" not in \
        (run_dir / "console.log").read_text(errors="replace")


def test_a_failing_setup_fails_the_run_with_its_output(built, accel):
    """A variant's setup.sh (SETUP) runs in the guest before the plan's
    work; when it fails the run fails, and the reason carries its exit
    code and what it printed."""
    run_dir = paths.BUILD_DIR / "test-runs" / "setup-fails" / "baseline"
    record = boot.run_plan(built["baseline"], health.PLAN, run_dir, accel,
                           timeout=180, cpus=CPUS,
                           env={"SETUP": "echo no such knob >&2\nexit 3\n"})
    assert record["status"] != "ok"
    assert "setup.sh failed with exit 3" in record["reason"]
    assert "no such knob" in record["reason"]
    assert (run_dir / "setup.log").read_text().splitlines()[-1] == \
        "setup-exit 3"


@pytest.mark.parametrize("name", [v.name for v in ALL])
def test_run_records_provenance(name, health_runs):
    record = store.read_json(health_runs[name][0] / "run.json")
    assert record["status"] == "ok"
    assert record["qemu"]["accel"]["name"] in ("kvm", "tcg")
    assert record["qemu"]["accel"]["reason"]
    assert "-smp 2" in record["qemu"]["command"]
    assert record["qemu"]["host_cpu"] != ""
    assert len(record["kernel"]["config_sha256"]) == 64
    assert [p["name"] for p in record["kernel"]["patches"]] == \
        [p.name for p in variants.select(name)[0].patches]
    assert 0 < record["boot_to_init_s"] < 60


def test_each_variants_switches_are_on_in_it_and_nowhere_else(health_runs):
    """Every option a fragment asks for is as asked in that kernel, and a
    switch (an option asked on) is on only in kernels whose fragment asks
    for it: no variant carries another's switch by accident."""
    # Debian's packaged kernels carry Debian's configuration, not the
    # common fragment: the rule is about the kernels the lab builds.
    built_here = [v for v in ALL if not v.kernel_variant().package]
    booted = {v.name: kconfig.read_config(
        health_runs[v.name][0] / "booted-config") for v in built_here}
    asked = {}
    for v in built_here:
        own = v.kernel_variant()
        requests = kconfig.parse_fragment(own.config)
        assert kconfig.mismatches(booted[v.name], requests) == []
        asked[v.name] = {r.option for r in requests}
    switches = {r.option for v in built_here for r in
                kconfig.parse_fragment(v.kernel_variant().config)
                if r.value != "n"}
    for name, config in booted.items():
        for opt in switches:
            if config.get(opt, "n") != "n":
                assert opt in asked[name], f"{name} carries {opt}"
    aware = {n for n, c in booted.items()
             if c.get("CONFIG_RT_SOFTIRQ_AWARE_SCHED") == "y"}
    assert "baseline" not in aware
    # (a guest list named by hand may leave stultz-v5 out)
    assert "stultz-v5" in aware or "stultz-v5" not in booted


def test_second_build_skips_every_rebuild(built, capsys):
    """A cached kernel is found without the shared tree's lock: the test
    holds every tree's lock, as another process's build would."""
    with contextlib.ExitStack() as held:
        for tree in sorted({b.tree.name for b in built.values()
                            if not b.packaged}):
            held.enter_context(cachelock.locked(tree))
        for i, v in enumerate(ALL, 1):
            started = time.monotonic()
            again = kernel.build(v, i, len(ALL))
            assert time.monotonic() - started < 10
            assert again.meta["hash"] == built[v.name].meta["hash"]
    assert capsys.readouterr().out.count("up to date") == len(ALL)


def test_broken_patch_on_the_packaged_tree_is_named(variant_root, capsys):
    patch = (paths.VARIANTS_DIR / "stultz-v5" / "series").parent / \
        "0003-softirq-defer-softirq-processing-to-ksoftirqd-if-CPU.patch"
    text = patch.read_text().replace(
        "\tpending = local_softirq_pending();\n+\tdeferred",
        "\tpending = local_softirq_pending_BROKEN();\n+\tdeferred")
    assert "BROKEN" in text
    v = variants.load(make_variant(variant_root, "lab-test-broken",
                                   "broken.patch\n", {"broken.patch": text}))
    baseline = variants.select("baseline")
    with pytest.raises(LabError) as e:
        kernel.build_all([v] + baseline)
    msg = str(e.value)
    assert msg.startswith("1 of 2 variant(s) failed to build (1 built)")
    assert "variant lab-test-broken: patch 1/1 broken.patch does not " \
           "apply" in msg
    assert "kernel/softirq.c hunk #" in msg
    # The variant after the broken one was still built (here: cached).
    assert "variant 2/2 baseline: up to date" in capsys.readouterr().out


def test_the_aa_control_boots_its_bases_own_image(built, health_runs):
    """An A/A control (variants/baseline-aa) is its base's kernel image,
    command line and guest under a second name: its run.json records the
    base's kernel hash, its initramfs holds the same files, and its
    kernel command line is the base's."""
    controls = [v for v in ALL if v.is_aa_control and v.base in built]
    if not controls:
        pytest.skip("no A/A control among the guest variants")
    for v in controls:
        mine, base = (json.loads((health_runs[n][0] / "run.json")
                                 .read_text()) for n in (v.name, v.base))
        assert mine["variant"] == v.name and base["variant"] == v.base
        assert mine["kernel"]["hash"] == base["kernel"]["hash"]
        assert built[v.name].image.read_bytes() == \
            built[v.base].image.read_bytes()
        words = [w.split("-")[-1] if w.endswith(".cpio") else w
                 for w in mine["qemu"]["command"].split()]
        theirs = [w.split("-")[-1] if w.endswith(".cpio") else w
                  for w in base["qemu"]["command"].split()]
        # the same command but for the run folder and the initramfs'
        # name (its variant), the content hash in that name the same
        assert [w for w in words if v.name not in w] == \
            [w for w in theirs if v.base not in w]
