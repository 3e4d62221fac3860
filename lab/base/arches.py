"""The guest architectures: everything that differs between an x86-64
guest and an arm64 one, declared once.

A variant names its architecture (variant.conf `arch`); its kernel is
built for it (cross-built with Debian's gcc-<triplet> where the host is
another), its guest programs come from Debian's packages of that
architecture, and its guests boot in the lab's QEMU for it.  x86_64 is
the lab's first and default guest; arm64 is the seeds' own platform,
phones whose CPUs differ in size (lab/docs/arm64.md).
"""
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .log import LabError


@dataclass(frozen=True)
class Arch:
    name: str              # variant.conf's value, and the kernel's ARCH
    # the build recipe's name: part of every kernel's content hash
    recipe: str
    # a fragment applied after common/kernel.config (None: none), for
    # what differs from the x86 guest that fragment describes
    config: Path
    image: str             # the kernel image, in the object folder
    cross_compile: str     # CROSS_COMPILE= ("" for the host's own)
    cross_package: str     # the Debian package with that compiler
    debian_arch: str       # dpkg's name, for its guest programs
    triplet: str           # where its Debian libraries live
    qemu_package: str      # Debian's package of its QEMU system binary
    qemu_target: str       # QEMU's configure target
    qemu_binary: str
    machine: tuple         # QEMU options for the board and its CPU
    console: str           # the guest's serial console


X86_64 = Arch(
    name="x86_64",
    recipe="allnoconfig+common/variant-merged/x86_64/v4-shared-tree",
    config=None, image="arch/x86/boot/bzImage", cross_compile="",
    cross_package="", debian_arch="amd64", triplet="x86_64-linux-gnu",
    qemu_package="qemu-system-x86", qemu_target="x86_64-softmmu",
    qemu_binary="qemu-system-x86_64", machine=(), console="ttyS0")

# QEMU's virt board: a GICv3 (its ITS gives virtio-pci MSIs) and a
# Cortex-A57, an ARMv8.0 core as the series' phones had.  Its device tree
# is QEMU's own, dumped and given CPU capacities (lab/run/capacities.py).
ARM64 = Arch(
    name="arm64",
    recipe="allnoconfig+common/arm64.config/variant-merged/arm64/"
           "v1-shared-tree",
    config=paths.REPO / "common" / "arm64.config",
    image="arch/arm64/boot/Image", cross_compile="aarch64-linux-gnu-",
    cross_package="gcc-aarch64-linux-gnu", debian_arch="arm64",
    triplet="aarch64-linux-gnu", qemu_package="qemu-system-arm",
    qemu_target="aarch64-softmmu", qemu_binary="qemu-system-aarch64",
    machine=("-machine", "virt,gic-version=3", "-cpu", "cortex-a57"),
    console="ttyAMA0")

ARCHES = {a.name: a for a in (X86_64, ARM64)}
DEFAULT = X86_64.name


def get(name: str) -> Arch:
    try:
        return ARCHES[name]
    except KeyError:
        raise LabError(f"no guest architecture {name!r} (the lab has "
                       f"{', '.join(ARCHES)})") from None
