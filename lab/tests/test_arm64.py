"""The arm64 guest with CPUs of different sizes, host side: a scenario's
capacities and what is refused in one line, the speeds handed to the
lab's QEMU, the variants' architecture, and where the probe's RT task
woke by capacity class.  The guests themselves: test_arm64_guest.py."""
import pytest

from lab.analyse import analysis
from lab.base import arches, variants
from lab.base.log import LabError
from lab.run import capacities, matrix, qemu, scenario, settings
from lab.tests.conftest import make_variant

PHONE = "description = x\nduration = 5\ncpus = 4\n"


def parse(tmp_path, text):
    path = tmp_path / "s.scenario"
    path.write_text(text)
    return scenario.parse(path)


def test_capacities_make_an_arm64_scenario_with_what_the_guest_checks(
        tmp_path):
    s = parse(tmp_path, PHONE + "capacities = 145 145 512 512\n"
              "sysctl = kernel.sched_util_clamp_min_rt_default=0\n")
    assert s.capacities == (145, 145, 512, 512) and s.arch == "arm64"
    env = s.plan_env()
    # the kernel scales the largest to 1024, and so does the check
    assert env["CAPACITIES"] == "290 290 1024 1024"
    assert env["SYSCTL"] == "kernel.sched_util_clamp_min_rt_default=0"
    assert capacities.speeds(s.capacities) == "290:290:1024:1024"
    # a scenario without them keeps its plan as it was
    plain = parse(tmp_path, PHONE)
    assert plain.arch == "" and "CAPACITIES" not in plain.plan_env()


@pytest.mark.parametrize("line, words", [
    ("capacities = 290 290 1024", "capacities lists 3 CPUs, but the guest "
     "has 4"),
    ("capacities = 0 290 1024 1024", "'0' is not a CPU capacity from 1 to "
     "1024"),
    ("capacities = 290 290 1024 1025", "'1025' is not a CPU capacity"),
    ("capacities = 290 290 big 1024", "'big' is not a CPU capacity"),
    ("sysctl = kernel.sched_util_clamp_min_rt_default", "is not name=value"),
    ("sysctl = kernel.x=1;reboot", "is not name=value"),
])
def test_bad_capacities_and_sysctls_are_refused_in_one_line(tmp_path, line,
                                                            words):
    with pytest.raises(LabError) as e:
        parse(tmp_path, PHONE + line + "\n")
    assert words in str(e.value)
    assert str(e.value).startswith(str(tmp_path / "s.scenario"))
    assert len(str(e.value).splitlines()) == 1


def test_a_phone_scenario_on_an_x86_variant_is_refused_before_any_build():
    phone = scenario.select("phone4-long-block")
    with pytest.raises(LabError) as e:
        matrix.check_arches(variants.select("baseline"), phone)
    assert "phone4-long-block.scenario" in str(e.value)
    assert "baseline is x86_64" in str(e.value)
    matrix.check_arches(variants.select("baseline-arm64"), phone)


def test_a_matrix_of_arm64_guests_runs_in_tcg_whatever_kvm_does():
    accel = matrix.tcg_for(variants.select("baseline-arm64"))
    assert accel.name == "tcg" and "KVM runs only the host's" in accel.reason
    assert accel.emulator["binary"].endswith("/qemu-system-aarch64")
    assert matrix.tcg_for(variants.select("baseline")) is None
    with pytest.raises(LabError, match="a matrix runs guests of one "
                       "architecture"):
        matrix.check_arches(variants.select("baseline,baseline-arm64"), [])


def test_speeds_go_to_the_accelerator_and_need_icount():
    accel = settings.select("icount-3-slice20")[0].to_accel()
    args = qemu.with_speeds(accel.args, (290, 290, 1024, 1024))
    assert args[:2] == ["-accel", "tcg,icount-slice=20000,"
                        "icount-speeds=290:290:1024:1024"]
    tcg = settings.select("tcg-multi")[0].to_accel()
    with pytest.raises(LabError, match="TCG with -icount"):
        qemu.with_speeds(tcg.args, (290, 1024))


def test_an_arm64_variant_is_built_from_the_same_patch_files():
    x86, arm = variants.select("stultz-v5,stultz-v5-arm64")
    assert arm.arch is arches.ARM64 and x86.arch is arches.X86_64
    assert [p.resolve() for p in arm.patches] == \
        [p.resolve() for p in x86.patches]
    # its kernel depends on the arm64 fragment; x86's does not
    assert arm.content_hash("d", arm.arch.recipe) != \
        x86.content_hash("d", x86.arch.recipe)
    assert "arch" not in x86.described()
    assert arm.described()["arch"] == "arm64"


def test_a_base_of_another_architecture_is_refused(variant_root):
    make_variant(variant_root, "baseline")
    folder = make_variant(variant_root, "mine-arm64")
    (folder / "variant.conf").write_text("arch = arm64\nbase = baseline\n")
    with pytest.raises(LabError, match="a base must be of the same "
                       "architecture"):
        variants.load(folder)
    (folder / "variant.conf").write_text("arch = sparc\n")
    with pytest.raises(LabError, match="arch = 'sparc': one of x86_64, "
                       "arm64"):
        variants.load(folder)


def test_the_generation_base_is_per_architecture():
    assert variants.generation_base("6.1") == "baseline"
    assert variants.generation_base("6.1", arch="arm64") == "baseline-arm64"
    assert variants.generation_base("6.12", arch="arm64") == \
        "mainline-6.12-arm64"


def test_placement_counts_wake_ups_by_capacity_class_and_misfits():
    env = {"CAPACITIES": "290 290 870 1024"}
    samples = [{"cpu": c} for c in (3, 3, 2, 0)]
    got = analysis.placement(samples, env)
    assert got["share"] == {"little": 0.25, "middle": 0.25, "big": 0.5}
    # the kernel's default clamp: only the 1024 CPU fits an RT task
    assert got["rt_clamp"] == 1024 and got["too_small"] == 0.5
    android = dict(env, SYSCTL="kernel.sched_util_clamp_min_rt_default=0")
    assert analysis.placement(samples, android)["too_small"] == 0
    mid = dict(env, SYSCTL="kernel.sched_util_clamp_min_rt_default=800")
    assert analysis.placement(samples, mid)["too_small"] == 0.25
