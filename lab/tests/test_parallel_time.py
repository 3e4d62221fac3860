"""Parallel virtual time in the lab's QEMU (common/qemu/0005), booted:
with N vCPUs busy each runs cpuspeed's loop at its full speed, where
under the shared clock each runs at 1/N of it.  On x86_64 and on arm64,
8 vCPUs (lab/docs/medium.md)."""
import pytest

from lab.base import arches, paths, variants
from lab.build import guestbuild, kernel
from lab.run import boot, settings

pytestmark = [pytest.mark.guest, pytest.mark.xdist_group("parallel-time")]

BUSY = (1, 2, 4, 8)
TOLERANCE = 0.05        # the issue's: each CPU within 5% of a lone one
SHARED_TOLERANCE = 0.10  # 1/N, less the guest's own ticks on the others


def rates(variant: str, setting: str) -> dict:
    """{busy CPUs: each busy CPU's loop rate}, one 8-vCPU boot."""
    v = variants.select(variant)[0]
    built = kernel.build(v)
    accel = settings.select(setting)[0].to_accel(arches.get(built.arch))
    run_dir = paths.BUILD_DIR / "test-runs" / "parallel-time" / \
        f"{variant}-{setting}"
    record = boot.run_plan(built, paths.GUEST_DIR / "plans" / "medium.sh",
                           run_dir, accel, timeout=600, cpus=max(BUSY),
                           initrd=guestbuild.initrd(v, built),
                           env={"BUSY": " ".join(map(str, BUSY))})
    assert record["status"] == "ok", record["reason"]
    assert (run_dir / "medium-exit").read_text().strip() == "0"
    out = {}
    for n in BUSY:
        lines = (run_dir / f"cpuspeed-b{n}.txt").read_text().splitlines()
        out[n] = [float(line.split()[1]) for line in lines]
        assert len(out[n]) == n, (n, lines)
    return out


@pytest.fixture(scope="module", params=["baseline", "baseline-arm64"])
def variant(request):
    return request.param


def test_in_parallel_time_every_busy_vcpu_runs_at_full_speed(variant):
    got = rates(variant, "parallel-8ns")
    alone = got[1][0]
    for n, per_cpu in got.items():
        for cpu, rate in enumerate(per_cpu):
            assert abs(rate / alone - 1) <= TOLERANCE, \
                f"{n} busy: cpu{cpu} {rate:.0f}/ms against {alone:.0f} alone"


def test_under_the_shared_clock_n_busy_vcpus_run_at_one_nth(variant):
    got = rates(variant, settings.DEFAULT_TCG)
    alone = got[1][0]
    for n, per_cpu in got.items():
        for cpu, rate in enumerate(per_cpu):
            assert abs(rate * n / alone - 1) <= SHARED_TOLERANCE, \
                f"{n} busy: cpu{cpu} {rate:.0f}/ms against {alone:.0f} alone"
