"""threaded-napi-6.12's set-up checks what it set (its setup.sh): a run
whose NIC's NAPI is not threaded fails, naming what it found, so no
report measures mainline-6.12 under the variant's name.

Runs when threaded-napi-6.12 is a guest variant (`make check
VARIANTS=baseline,threaded-napi-6.12`); a 6.12 kernel is not among
`make check`'s builds."""
import pytest

from lab.base import paths
from lab.run import boot, health, nicload
from lab.tests.conftest import guest_variants

pytestmark = pytest.mark.guest

NAME = "threaded-napi-6.12"
VARIANT = {v.name: v for v in guest_variants()}.get(NAME)
needs_variant = pytest.mark.skipif(
    VARIANT is None, reason=f"{NAME} is not a guest variant "
    f"(LAB_TEST_VARIANTS=baseline,{NAME})")


def boot_with_nic(built, accel, test, setup):
    """Boot the variant's kernel with a virtio NIC (a trickle of frames
    from the host) and `setup` as its set-up; the run's record and
    setup.log."""
    run_dir = paths.BUILD_DIR / "test-runs" / test / NAME
    env = dict(VARIANT.plan_env(), SETUP=setup)
    with nicload.Sender(100, run_dir / "nic-sent.json") as nic:
        run_dir.mkdir(parents=True, exist_ok=True)
        record = boot.run_plan(built[NAME], health.PLAN, run_dir, accel,
                               timeout=180, cpus=2, append=VARIANT.append,
                               env=env, extra_args=nic.qemu_args())
    return record, (run_dir / "setup.log").read_text()


@needs_variant
def test_the_nics_napi_runs_in_threads_at_fifo_50(built, accel):
    record, log = boot_with_nic(built, accel, "threaded-napi", VARIANT.setup)
    assert record["status"] == "ok", record.get("reason")
    lines = log.splitlines()
    assert "eth0 threaded 1" in lines
    napi = [line for line in lines if line.startswith("napi/eth0-")]
    assert napi and all(line.endswith("SCHED_FIFO 50 ") for line in napi)
    assert "backlog_napi/1 SCHED_FIFO 50 " in lines
    assert lines[-2].startswith("setup check passed: threaded NAPI on eth0;")


@needs_variant
def test_a_nic_whose_napi_is_not_threaded_fails_the_run(built, accel):
    """The set-up's write leaves the NIC unthreaded (0 written instead of
    1, as a kernel that ignored the write would): the check fails the
    run and says what it found."""
    unthreaded = VARIANT.setup.replace('echo 1 > "$dev/threaded"',
                                       'echo 0 > "$dev/threaded"')
    assert unthreaded != VARIANT.setup
    record, log = boot_with_nic(built, accel, "threaded-napi-off",
                                unthreaded)
    assert record["status"] != "ok"
    assert "setup check failed: eth0's threaded reads 0" in record["reason"]
    assert log.splitlines()[-1] == "setup-exit 1"
