"""Which accelerator guests run under: the one place that decides.

KVM is used where it works.  An existing /dev/kvm is not proof: on some
hosts (nested virtualisation) guests hang at kernel entry under KVM.  So
the first boot of a session probes KVM with a short boot that must reach
the kernel's root-mount panic within seconds, and falls back to TCG
otherwise, in the setting the fidelity study chose (lab/run/settings.py).
The verdict is cached per host boot.  A runner whose guests run
elsewhere asks for tcg(), with debian_qemu where they have only Debian's
QEMU (LAVA workers without the lab's package), or names its machine.
"""
import json
import os
import time
from pathlib import Path

from ..base import paths
from . import qemu, settings
from ..base.log import LabError, warn

tcg = settings.tcg        # the TCG setting, for runners that need it


def choose(kernel: Path) -> qemu.Accel:
    """KVM if a probe boot works, else TCG; LAB_ACCEL=kvm|tcg forces."""
    forced = os.environ.get("LAB_ACCEL", "")
    if forced == "tcg":
        return tcg("forced by LAB_ACCEL=tcg")
    if forced and forced != "kvm":
        raise LabError(f"LAB_ACCEL={forced!r}: use kvm or tcg")
    dev = qemu.kvm_device()
    if not forced:
        if not dev.exists():
            return tcg(f"{dev} does not exist")
        if not os.access(dev, os.R_OK | os.W_OK):
            return tcg(f"{dev} is not readable and writable")

    verdict = paths.cache_dir() / "accel.json"
    key = {"boot_id": qemu.boot_id(), "qemu": qemu.qemu_binary(),
           "device": str(dev)}
    saved = {}
    if not forced and verdict.is_file():
        saved = json.loads(verdict.read_text())
    if saved.get("key") != key or "kvm" not in saved:
        started = time.monotonic()
        works, why = qemu.probe_kvm(kernel)
        saved = {"key": key, "kvm": works, "why": why,
                 "took": round(time.monotonic() - started, 1)}
        verdict.parent.mkdir(parents=True, exist_ok=True)
        verdict.write_text(json.dumps(saved))
        if not works:
            warn(f"KVM unusable ({why}); using TCG")
    why, took = saved["why"], saved["took"]
    if saved["kvm"]:
        return qemu.Accel("kvm", f"KVM probe boot: {why} ({took:.1f} s)",
                          ["-accel", "kvm", "-cpu", "host"])
    if forced:
        raise LabError(f"LAB_ACCEL=kvm but KVM does not work: {why}")
    return tcg(f"{dev} exists but KVM is unusable: {why}; fell back "
               f"after {took:.1f} s")
