"""The threaded-napi variants' set-up checks what it set
(guest/bin/lab-threaded-napi, one line in each setup.sh): a run whose
NIC's NAPI is not threaded, or whose threads are not where they were
asked to be, fails, naming what it found, so no report measures the
plain kernel under the variant's name.

Runs for the threaded-napi variants that are guest variants (`make
check VARIANTS=baseline,threaded-napi-6.12,threaded-napi-rt`); a 6.12
kernel is not among `make check`'s builds."""
import pytest

from lab.base import paths
from lab.run import boot, health, nicload
from lab.tests.conftest import guest_variants

pytestmark = pytest.mark.guest

THREADED = {v.name: v for v in guest_variants()
            if v.name.startswith("threaded-napi")}
PROGRAM = paths.GUEST_DIR / "bin" / "lab-threaded-napi"
needs_one = pytest.mark.skipif(
    not THREADED, reason="no threaded-napi variant is a guest variant "
    "(LAB_TEST_VARIANTS=baseline,threaded-napi-6.12)")


def boot_with_nic(built, accel, variant, test, setup):
    """Boot the variant's kernel with a virtio NIC (a trickle of frames
    from the host) and `setup` as its set-up; the run's record and
    setup.log."""
    run_dir = paths.BUILD_DIR / "test-runs" / test / variant.name
    env = dict(variant.plan_env(), SETUP=setup)
    with nicload.Sender(100, run_dir / "nic-sent.json") as nic:
        run_dir.mkdir(parents=True, exist_ok=True)
        record = boot.run_plan(built[variant.name], health.PLAN, run_dir,
                               accel, timeout=180, cpus=2,
                               append=variant.append, env=env,
                               extra_args=nic.qemu_args())
    return record, (run_dir / "setup.log").read_text()


@pytest.mark.parametrize("name", sorted(THREADED))
def test_the_nics_napi_runs_in_threads_as_asked(built, accel, name):
    variant = THREADED[name]
    policy, prio, cpu = variant.setup.split()[-3:]
    want = f"SCHED_{policy.upper()} {prio} "
    record, log = boot_with_nic(built, accel, variant, "threaded-napi",
                                variant.setup)
    assert record["status"] == "ok", record.get("reason")
    lines = log.splitlines()
    assert "eth0 threaded 1" in lines
    napi = [line for line in lines if line.startswith("napi/eth0-")]
    where = "" if cpu == "-" else f"cpus {1 << int(cpu):x}"
    assert napi and all(line.endswith(want + where) for line in napi), napi
    assert f"backlog_napi/1 {want}" in lines
    assert lines[-2].startswith("setup check passed: threaded NAPI on eth0;")


def first():
    return THREADED[sorted(THREADED)[0]]


@needs_one
def test_a_nic_whose_napi_is_not_threaded_fails_the_run(built, accel):
    """The set-up's write leaves the NIC unthreaded (0 written instead of
    1, as a kernel that ignored the write would): the check fails the
    run and says what it found."""
    program = PROGRAM.read_text()
    unthreaded = program.replace('echo 1 > "$dev/threaded"',
                                 'echo 0 > "$dev/threaded"')
    assert unthreaded != program
    record, log = boot_with_nic(built, accel, first(), "threaded-napi-off",
                                "set -- fifo 50 -\n" + unthreaded)
    assert record["status"] != "ok"
    assert "setup check failed: eth0's threaded reads 0" in record["reason"]
    assert log.splitlines()[-1] == "setup-exit 1"


@needs_one
def test_threads_pinned_to_a_cpu_the_guest_lacks_fail_the_run(built, accel):
    record, log = boot_with_nic(built, accel, first(), "threaded-napi-cpu7",
                                "lab-threaded-napi fifo 50 7\n")
    assert record["status"] != "ok"
    assert "setup check failed: no CPU 7 to pin the NAPI threads to" in \
        record["reason"]
