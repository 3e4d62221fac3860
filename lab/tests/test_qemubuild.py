"""The lab's QEMU: which settings need it, how runs record it, and what a
patch that does not apply says.  No build here (test_emulator.py)."""
import pytest

from lab.run import accelerator, qemu, runfolder, settings
from lab.build import qemubuild, qemudeb
from lab.base import arches, store
from lab.base.log import LabError

SLICED = settings.select("icount-3-slice20")[0]


def test_the_sliced_setting_asks_for_the_lab_qemu_and_records_it():
    accel = SLICED.to_accel()
    assert accel.args[:2] == ["-accel", "tcg,icount-slice=20000"]
    assert accel.emulator["patches"] == [p.name for p in qemubuild.patches()]
    assert len(accel.emulator["patches"]) == 5
    assert accel.emulator["source"].startswith("qemu ")
    assert accel.as_dict()["emulator"] == accel.emulator
    assert "the lab's QEMU" in accel.summary()
    # Debian's settings stay Debian's
    assert settings.select("icount-3-nosleep")[0].to_accel().emulator == {}


def test_the_binary_is_lab_qemu_for_its_settings_unless_lab_qemu_is_set(
        monkeypatch, tmp_path):
    monkeypatch.delenv("LAB_QEMU", raising=False)
    monkeypatch.setattr(qemubuild, "ensure",
                        lambda count=None, arch=arches.X86_64:
                        tmp_path / f"{arch.qemu_binary}-q{count}")
    assert qemu.qemu_binary(SLICED.to_accel()) == \
        str(tmp_path / f"qemu-system-x86_64-q{len(qemubuild.patches())}")
    # an arm64 guest's is the lab's build for its target
    assert qemu.qemu_binary(SLICED.to_accel(), arches.ARM64) == \
        str(tmp_path / f"qemu-system-aarch64-q{len(qemubuild.patches())}")
    # the build without the patches is its own binary
    unpatched = settings.select("icount-3-labbuild")[0].to_accel()
    assert qemu.qemu_binary(unpatched) == \
        str(tmp_path / "qemu-system-x86_64-q0")
    monkeypatch.setattr(qemudeb, "debian_binary", lambda: "/debians")
    assert qemu.qemu_binary(qemu.Accel("tcg", "x")) == "/debians"
    monkeypatch.setenv("LAB_QEMU", "/opt/q")
    assert qemu.qemu_binary(SLICED.to_accel()) == "/opt/q"
    # LAB_QEMU is an x86 binary: an arm64 guest keeps the lab's
    assert qemu.qemu_binary(SLICED.to_accel(), arches.ARM64) != "/opt/q"


def test_a_run_made_by_another_qemu_build_is_redone(tmp_path):
    accel = SLICED.to_accel()
    run = tmp_path / "v" / "idle" / "boot-1"
    run.mkdir(parents=True)
    record = {"status": "ok", "kernel": {"hash": "k"}, "variant": "v",
              "boot": 1, "scenario": {"name": "idle", "digest": "s"},
              "qemu": {"accel": accel.as_dict()}}
    store.write_json(run / "run.json", record)
    assert runfolder.finished(run, "k", "s", accel)
    record["qemu"]["accel"]["emulator"] = dict(accel.emulator, build="0" * 16)
    store.write_json(run / "run.json", record)
    assert not runfolder.finished(run, "k", "s", accel)


def test_lava_guests_in_debians_qemu_get_its_best_setting(monkeypatch):
    monkeypatch.setenv("LAB_TCG_SETTING", "icount-3-slice20")
    a = accelerator.tcg("LAVA", debian_qemu=True)
    assert a.setting == settings.DEBIAN_TCG and not a.emulator
    assert "needs the lab's QEMU" in a.reason
    assert accelerator.tcg("here").setting == "icount-3-slice20"


def test_a_patch_change_makes_a_new_build(monkeypatch, tmp_path):
    (tmp_path / "0001-a.patch").write_text("one\n")
    monkeypatch.setattr(qemubuild, "PATCHES_DIR", tmp_path)
    before = qemubuild.build_key("1:7.2")
    (tmp_path / "0001-a.patch").write_text("two\n")
    assert qemubuild.build_key("1:7.2") != before
    assert qemubuild.build_key("1:7.3") != qemubuild.build_key("1:7.2")


def test_a_patch_that_does_not_apply_is_named(monkeypatch, tmp_path):
    tree = tmp_path / "src"
    tree.mkdir()
    (tree / "a.c").write_text("int a;\n")
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "0001-x.patch").write_text(
        "--- a/a.c\n+++ b/a.c\n@@ -1 +1 @@\n-int b;\n+int c;\n")
    monkeypatch.setattr(qemubuild, "PATCHES_DIR", patches)
    with pytest.raises(LabError, match="0001-x.patch: does not apply"):
        qemubuild._apply_patches(tree, qemubuild.patches())


def test_the_setting_says_how_long_a_stall_is_the_emulators():
    from lab.analyse import results
    lab_qemu = settings.select("icount-3-slice20")[0].to_accel()
    debian = settings.select("icount-3-nosleep")[0].to_accel()
    assert lab_qemu.stall_us is None and debian.stall_us == 500
    assert results.stall_limit(lab_qemu.as_dict()) == float("inf")
    assert results.stall_limit(debian.as_dict()) == 500
    # run.json from before the setting said: the QEMU build decides
    assert results.stall_limit({"emulator": {"build": "x"}}) == float("inf")
    assert results.stall_limit({"emulator": {}}) == 500


def test_the_build_without_patches_is_another_build_that_stalls():
    unpatched = settings.select("icount-3-labbuild")[0].to_accel()
    assert unpatched.emulator["patches"] == []
    assert unpatched.emulator["build"] != SLICED.to_accel().emulator["build"]
    assert qemubuild.patches(1) == qemubuild.patches()[:1]
    # without patch 0001 one busy vCPU stalls the other, as in Debian's
    assert unpatched.stall_us == settings.STALL_US
