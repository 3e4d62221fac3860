"""The trace phase in real guests: a 5 ms BLOCK handler every 20 ms on
CPU0, CPU1 idle.  Measured under icount-3-nosleep (4 s runs; the same
under icount-3-slice20): baseline's
worst wake-ups were the BLOCK softirq on the task's own CPU, inline or
in ksoftirqd/0 (4809 and 4971 us in two runs); stultz-v5's were mostly
not a softirq on its CPU (62 us: interrupts and a late IPI on CPU1,
where it was placed), but not always (below)."""
import pytest

from lab.run import matrix, scenario
from lab.analyse import results
from lab.base import variants

# its tests share module fixtures: one worker runs them all
pytestmark = [pytest.mark.guest, pytest.mark.xdist_group("traces_guest")]

LONG_BLOCK = """\
description = the long BLOCK handler, traced
duration = 4
module = vector=block spin_us=5000 period_us=20000 cpu=0
trace = 1000
timerlat = 1000
"""


@pytest.fixture(scope="module")
def traced(tmp_path_factory, built):
    folder = tmp_path_factory.mktemp("traces")
    path = folder / "long-block-traced.scenario"
    path.write_text(LONG_BLOCK)
    root = folder / "results"
    matrix.run(variants.select("baseline,stultz-v5"),
               [scenario.parse(path)], 1, root)
    return {v: results.summarize(root / v / "long-block-traced" / "boot-1")
            for v in ("baseline", "stultz-v5")}


def test_rtla_built_from_6_12_runs_on_the_6_1_guests(traced):
    """rtla timerlat --aa-only, its threads pinned one per CPU: the CPU0
    thread waits for the 5 ms handler on every kernel, placement or not."""
    for r in traced.values():
        rtla = r["timerlat"]
        assert rtla["hit"], rtla
        assert rtla["cpu"] == 0 and rtla["latency_us"] > 1000
        assert rtla["cause"] == "BLOCK softirq" and rtla["share"] > 0.8


def test_every_traced_window_is_a_cyclictest_sample(traced):
    for r in traced.values():
        assert r["trace"]["agreement"]["ok"], r["trace"]["agreement"]


def test_the_traced_run_is_measured_for_the_overhead(traced):
    for r in traced.values():
        assert r["status"] == "ok", r["reason"]
        assert sum(r["traced_histogram"].values()) > 1000
        assert r["trace"]["wakeups"] > 1000, r["trace"]


def kernel_worst(r: dict) -> list:
    """The worst windows not blamed on the emulator: a vCPU that stands
    still inside an interrupt (about 4 ms, one guest tick, seen in every
    scenario's traces under Debian's QEMU) is not a kernel cause."""
    return [x for x in r["trace"]["worst"] if not x["emulator"]]


def test_baseline_worst_case_is_the_softirq_on_its_cpu(traced):
    # inline or in ksoftirqd: either way the handler runs with bottom
    # halves off on the task's CPU, and the RT task waits for it
    worst = kernel_worst(traced["baseline"])[0]
    assert worst["latency_us"] > 3000
    assert worst["cause"].startswith("BLOCK softirq")
    assert f"on CPU{worst['ran_on']}, the task's CPU" in worst["cause"]


def test_stultz_moves_most_wakeups_off_the_softirq_cpu(traced):
    """Placement is not perfect: in one traced run stultz-v5's three
    worst windows were the BLOCK softirq on CPU0, 5.0 ms, with the trace
    agreeing with cyclictest (max 5109 us), while the untraced run of the
    same boot had a max of 43 us.  What holds run after run is the
    count: baseline waits for the handler in about every fifth period,
    stultz-v5 in a few of thousands."""
    base, stultz = traced["baseline"]["trace"], traced["stultz-v5"]["trace"]
    assert base["over"] > 100, base["over"]
    assert stultz["over"] * 10 < base["over"], (stultz["over"], base["over"])
