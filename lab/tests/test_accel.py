"""Accelerator detection and fallback, with stand-in QEMU binaries."""
import re
import time
from pathlib import Path

import pytest

from lab.run import accelerator, qemu, settings
from lab.base import paths
from lab.base.log import LabError


def fake_qemu(tmp_path, body):
    exe = tmp_path / "fake-qemu"
    exe.write_text("#!/bin/sh\n" + body + "\n")
    exe.chmod(0o755)
    return exe


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("LAB_ACCEL", raising=False)
    monkeypatch.delenv("LAB_TCG_SETTING", raising=False)
    kvm = tmp_path / "kvm"
    kvm.write_text("")
    monkeypatch.setenv("LAB_KVM_DEVICE", str(kvm))
    monkeypatch.setattr(qemu, "KVM_PROBE_SECONDS", 2)
    return tmp_path


def test_no_kvm_device_means_tcg(env, monkeypatch):
    monkeypatch.setenv("LAB_KVM_DEVICE", str(env / "absent"))
    a = accelerator.choose(env / "bzImage")
    assert a.name == "tcg" and "does not exist" in a.reason
    assert a.setting == settings.DEFAULT_TCG
    assert a.args == ["-accel", "tcg,icount-slice=20000",
                      "-icount", "shift=3,sleep=off"]
    assert a.emulator["patches"]


def test_tcg_setting_can_be_named(env, monkeypatch):
    monkeypatch.setenv("LAB_KVM_DEVICE", str(env / "absent"))
    monkeypatch.setenv("LAB_TCG_SETTING", "tcg-single")
    a = accelerator.choose(env / "bzImage")
    assert a.args == ["-accel", "tcg,thread=single"]
    assert "setting tcg-single from LAB_TCG_SETTING" in a.reason
    monkeypatch.setenv("LAB_TCG_SETTING", "kvm")
    with pytest.raises(LabError, match="name a TCG setting"):
        accelerator.choose(env / "bzImage")


def test_hanging_kvm_falls_back_to_tcg_within_seconds(env, monkeypatch):
    monkeypatch.setenv("LAB_QEMU", str(fake_qemu(env, "sleep 30")))
    t = time.monotonic()
    a = accelerator.choose(env / "bzImage")
    assert time.monotonic() - t < 5
    assert a.name == "tcg"
    assert "KVM is unusable" in a.reason and "guest hangs" in a.reason


def test_working_kvm_is_used(env, monkeypatch):
    monkeypatch.setenv("LAB_QEMU", str(fake_qemu(
        env, 'echo "Linux version 6.1.192-baseline"; echo "Kernel panic"')))
    a = accelerator.choose(env / "bzImage")
    assert a.name == "kvm" and a.args[:2] == ["-accel", "kvm"]


def test_verdict_is_cached_for_this_host_boot(env, monkeypatch):
    monkeypatch.setenv("LAB_QEMU", str(fake_qemu(env, "sleep 30")))
    accelerator.choose(env / "bzImage")
    t = time.monotonic()
    assert accelerator.choose(env / "bzImage").name == "tcg"
    assert time.monotonic() - t < 1       # no second probe


def test_qemu_that_fails_at_once_is_not_kvm(env, monkeypatch):
    monkeypatch.setenv("LAB_QEMU", str(fake_qemu(
        env, 'echo "Could not access KVM kernel module"; exit 1')))
    a = accelerator.choose(env / "bzImage")
    assert a.name == "tcg" and "Could not access KVM" in a.reason


def test_forced_accelerators(env, monkeypatch):
    monkeypatch.setenv("LAB_ACCEL", "tcg")
    assert accelerator.choose(env / "bzImage").name == "tcg"
    monkeypatch.setenv("LAB_ACCEL", "kvm")
    monkeypatch.setenv("LAB_QEMU", str(fake_qemu(env, "sleep 30")))
    with pytest.raises(LabError, match="LAB_ACCEL=kvm but KVM does not"):
        accelerator.choose(env / "bzImage")
    monkeypatch.setenv("LAB_ACCEL", "hvf")
    with pytest.raises(LabError, match="use kvm or tcg"):
        accelerator.choose(env / "bzImage")


def test_icount_delay_loop_matches_the_guests_tick():
    """lpj= is TSC cycles per jiffy: it holds only while every kernel the
    lab builds ticks at settings.GUEST_HZ."""
    frags = [paths.REPO / "common" / "kernel.config",
             *sorted((paths.REPO / "variants").glob("*/config"))]
    hz = {f.relative_to(paths.REPO): line.strip() for f in frags
          for line in f.read_text().splitlines()
          if re.match(r"CONFIG_HZ_\d+=y", line)}
    assert hz == {Path("common/kernel.config"):
                  f"CONFIG_HZ_{settings.GUEST_HZ}=y"}
    assert "lpj=4000000" in settings.select("icount-3-slice20")[0].append
