"""Debian's QEMU, rebuilt with the lab's patches (common/qemu/).

QEMU 7.2 runs a 2-vCPU icount guest round-robin on one host thread and
lets one busy vCPU stand still the other for milliseconds
(lab/docs/fidelity.md).  The fix is two small QEMU patches.  They are
applied to the source of the very package installed here (`apt-get source` through
a private apt configuration, so the system's own is not touched, and
`dpkg-source -x`, which applies Debian's own patches first), and the
binary is built once into cache/qemu/<hash>/, keyed by that source
version, the patches and the configure options.  Nothing is installed.
"""
import hashlib
import json
import os
import shutil
import subprocess
import time
from functools import partial
from pathlib import Path

from ..base import arches, paths
from .cachelock import locked
from .kernel import check_disk
from . import debs, step
from ..base.log import LabError, fmt_seconds, info

PATCHES_DIR = paths.REPO / "common" / "qemu"
# The x86-64 guest's, which the lab's QEMU package replaces (qemudeb.py).
PACKAGE = arches.X86_64.qemu_package
BINARY = arches.X86_64.qemu_binary
# Only what the lab's guests use: the guest's target, virtio, 9p, user
# networking.  The firmware comes from Debian's packages, as for the
# system's QEMU (an arm64 guest boots its kernel directly and needs none).
CONFIGURE = ["--target-list={target}", "--enable-virtfs",
             "--enable-slirp", "--disable-docs", "--disable-tools",
             "--disable-guest-agent", "--disable-gtk", "--disable-sdl",
             "--disable-vnc", "--disable-opengl", "--disable-spice",
             "--disable-curses", "--disable-xen", "--disable-werror",
             "--firmwarepath=/usr/share/qemu:/usr/share/seabios:"
             "/usr/lib/ipxe/qemu"]
NEEDED_GB = 1.5


def patches(count: int = None) -> list:
    """The lab's QEMU patches, the first `count` of them (None: all): a
    build with fewer tells a patch's effect from the build's own."""
    return sorted(PATCHES_DIR.glob("*.patch"))[:count]


def installed_source(arch=arches.X86_64) -> tuple:
    """(source package, source version) of the installed QEMU for the
    guest architecture `arch`."""
    r = subprocess.run(["dpkg-query", "-W", "-f",
                        "${source:Package} ${source:Version}",
                        arch.qemu_package], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        raise LabError(f"{arch.qemu_package} is not installed: `make deps` "
                       f"installs it")
    name, version = r.stdout.split()
    return name, version


def configure_options(arch=arches.X86_64) -> list:
    return [o.format(target=arch.qemu_target) for o in CONFIGURE]


def build_key(version: str, count: int = None, arch=arches.X86_64) -> str:
    h = hashlib.sha256(
        f"{version}\n{' '.join(configure_options(arch))}\n".encode())
    for p in patches(count):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


def folder(key: str) -> Path:
    return paths.cache_dir() / "qemu" / key[:16]


def provenance(count: int = None, arch=arches.X86_64) -> dict:
    """What the lab's QEMU is made of (run.json records it)."""
    name, version = installed_source(arch)
    key = build_key(version, count, arch)
    return {"source": f"{name} {version} (Debian)",
            "patches": [p.name for p in patches(count)], "build": key[:16],
            "binary": str(folder(key) / arch.qemu_binary)}


def ensure(count: int = None, arch=arches.X86_64) -> Path:
    """Build the lab's QEMU for guests of `arch` (with the first `count`
    patches, None: all) unless the cache has it; return the binary."""
    name, version = installed_source(arch)
    key = build_key(version, count, arch)
    out = folder(key)
    binary = arch.qemu_binary
    if (out / binary).is_file():
        return out / binary
    with locked(f"qemu-{key[:16]}"):
        if (out / binary).is_file():        # built while we waited
            return out / binary
        check_disk(paths.cache_dir(), NEEDED_GB, "the QEMU build")
        started = time.monotonic()
        info(f"QEMU: building {binary} of {name} {version} with "
             f"{len(patches(count))} lab patches (once, about 5 min)")
        work = out.with_name(out.name + ".work")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        tree = _unpacked(name, version, work)
        _apply_patches(tree, patches(count))
        _compile(tree, work / "build", arch)
        out.mkdir(parents=True, exist_ok=True)
        # under a temporary name: a copy cut short is never taken as built
        shutil.copy2(work / "build" / binary, out / (binary + ".tmp"))
        os.replace(out / (binary + ".tmp"), out / binary)
        (out / "provenance.json").write_text(
            json.dumps(provenance(count, arch), indent=1))
        shutil.rmtree(work, ignore_errors=True)
        info(f"QEMU: built in {fmt_seconds(time.monotonic() - started)}")
    return out / binary


_run = partial(step.run, prefix="QEMU build: ")


def _unpacked(name: str, version: str, work: Path) -> Path:
    """Debian's source of `version`, with Debian's patches applied."""
    apt = work / "apt"
    (apt / "sources").mkdir(parents=True)
    (apt / "lists" / "partial").mkdir(parents=True)
    codename = debs.release()
    (apt / "sources" / "deb-src.sources").write_text(
        debs.sources("deb-src", codename))
    opts = ["-o", "Dir::Etc::SourceList=/dev/null",
            "-o", f"Dir::Etc::SourceParts={apt / 'sources'}",
            "-o", f"Dir::State::Lists={apt / 'lists'}",
            "-o", "APT::Sandbox::User=root"]
    _run(["apt-get", *opts, "update"], work,
         "apt-get update of Debian's source lists (are Debian's mirrors "
         "reachable?)", work / "apt-update.log")
    _run(["apt-get", *opts, "source", "--download-only",
          f"{name}={version}"], work, f"apt-get source {name}={version}",
         work / "apt-source.log")
    dsc = next(work.glob(f"{name}_*.dsc"), None)
    if dsc is None:
        raise LabError(f"QEMU build: no .dsc for {name} {version} in {work}")
    _run(["dpkg-source", "-x", dsc.name, "src"], work,
         f"dpkg-source -x {dsc.name}", work / "dpkg-source.log")
    return work / "src"


def _apply_patches(tree: Path, chosen: list) -> None:
    for p in chosen:
        r = subprocess.run(["patch", "-p1", "--batch", "--forward", "-i",
                            str(p)], cwd=tree, capture_output=True, text=True)
        if r.returncode != 0:
            raise LabError(f"{p}: does not apply to Debian's QEMU source:\n"
                           + "\n".join((r.stdout + r.stderr).splitlines()
                                       [-10:]))


def _compile(tree: Path, build: Path, arch) -> None:
    build.mkdir()
    _run([str(tree / "configure"), *configure_options(arch)], build,
         "configure (missing -dev packages? `make deps`)",
         build.parent / "configure.log")
    jobs = str(os.cpu_count() or 1)
    _run(["nice", "ninja", "-j", jobs, arch.qemu_binary], build, "ninja",
         build.parent / "ninja.log")
