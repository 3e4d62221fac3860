"""The lab's QEMU as a Debian package, for LAVA workers (and anyone).

LAVA's qemu device type runs `qemu-system-x86_64` from the worker's PATH
and logs the version dpkg gives for qemu-system-x86.  So the package is
Debian's own qemu-system-x86, the very version installed here, with
its x86-64 binary replaced by the lab's build (lab/build/qemubuild.py:
the same Debian source, Debian's patches, then common/qemu/) and a
version suffix that names the lab and the build, as a Debian user's
local rebuild would: `<Debian's version>+softirqlab.<build>`.  Its
dependencies, firmware paths and other files stay Debian's, so dpkg
installs it in place of Debian's and `apt-get install
--allow-downgrades qemu-system-x86=<Debian's version>` takes it back.  The
build id in the version is what a LAVA job's log then shows, and what
the lab checks when it collects the job (lab/run/runners/lava/collect.py).

Where the package is installed, /usr/bin/qemu-system-x86_64 is no
longer Debian's: the settings that measure Debian's QEMU run a copy of
Debian's binary unpacked into the cache instead (debian_binary).
"""
import hashlib
import os
import re
import shutil
import subprocess
from functools import partial
from pathlib import Path

from ..base import paths
from ..base.log import LabError, info
from . import qemubuild
from .cachelock import locked
from . import step

SUFFIX = "+softirqlab."
BUILD_IN_VERSION = re.compile(re.escape(SUFFIX) + r"([0-9a-f]{16})$")
DEBIAN_PATH = "qemu-system-x86_64"
# Debian's QEMU finds its modules (TCG among them) and firmware relative
# to its own folder, and these come from other packages: an unpacked
# copy links them to the system's
SHARED = ("usr/lib/x86_64-linux-gnu/qemu", "usr/share/qemu",
          "usr/share/seabios", "usr/lib/ipxe")


def installed_version() -> str:
    """The installed qemu-system-x86's version ('' if none)."""
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}",
                        qemubuild.PACKAGE], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else ""


def build_of(version: str) -> str:
    """The lab's QEMU build a package version names ('' for Debian's)."""
    m = BUILD_IN_VERSION.search(version or "")
    return m.group(1) if m else ""


def debian_version(version: str) -> str:
    """Debian's version under the lab's suffix."""
    return version.split(SUFFIX)[0]


def without_epoch(version: str) -> str:
    """A version as dpkg's file names and the cache's folders write it."""
    return version.split(":", 1)[-1]


def lab_version(version: str, build: str) -> str:
    return f"{debian_version(version)}{SUFFIX}{build}"


def control(text: str, version: str, build: str, source: str,
            grown_kb: int = 0) -> str:
    """Debian's control file, turned into the lab's package's; the
    binary is `grown_kb` KiB larger than Debian's."""
    out = []
    for line in text.splitlines():
        if line.startswith("Version:"):
            line = f"Version: {lab_version(version, build)}"
        elif line.startswith("Installed-Size:"):
            line = f"Installed-Size: {int(line.split()[1]) + grown_kb}"
        elif line.startswith("Source:"):
            continue
        out.append(line)
        if line.startswith("Package:"):
            # the source version stays Debian's: qemubuild keys its build
            # on it, so the lab builds the same QEMU with this installed
            out.append(f"Source: {source}")
    out.append(f" .\n This build replaces qemu-system-x86_64 with the "
               f"softirq-rt lab's build\n {build} (Debian's source and "
               f"patches, then the lab's common/qemu/).")
    return "\n".join(out) + "\n"


_run = partial(step.run, prefix="QEMU package: ")


def debian_deb(version: str) -> Path:
    """Debian's qemu-system-x86 .deb of `version`, downloaded once."""
    folder = paths.cache_dir() / "qemu" / "debian-debs"
    folder.mkdir(parents=True, exist_ok=True)
    want = debian_version(version)
    # apt-get download writes the epoch's ':' as '%3a': matched by the *
    plain = without_epoch(want)
    found = list(folder.glob(f"{qemubuild.PACKAGE}_*{plain}_*.deb"))
    if found:
        return found[0]
    _run(["apt-get", "download", f"{qemubuild.PACKAGE}={want}"], folder,
         f"apt-get download {qemubuild.PACKAGE}={want} (are Debian's "
         f"mirrors reachable? `apt-get update` once)")
    found = list(folder.glob(f"{qemubuild.PACKAGE}_*{plain}_*.deb"))
    if not found:
        raise LabError(f"QEMU package: apt-get download left no "
                       f"{qemubuild.PACKAGE} {want} .deb in {folder}")
    return found[0]


def debian_binary() -> str:
    """Debian's own qemu-system-x86_64: the system's, or where the lab's
    package replaced it, Debian's binary unpacked into the cache."""
    version = installed_version()
    if not build_of(version):
        return DEBIAN_PATH
    plain = without_epoch(debian_version(version))
    out = paths.cache_dir() / "qemu" / f"debian-{plain}"
    binary = out / "usr" / "bin" / qemubuild.BINARY
    if binary.is_file():
        return str(binary)
    with locked(f"qemu-debian-{plain}"):
        if not binary.is_file():
            tmp = out.with_name(out.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            _run(["dpkg-deb", "-x", str(debian_deb(version)), str(tmp)],
                 tmp, "dpkg-deb -x of Debian's package")
            for rel in SHARED:
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                (tmp / rel).symlink_to("/" + rel)
            shutil.rmtree(out, ignore_errors=True)
            os.replace(tmp, out)
    return str(binary)


def output_dir() -> Path:
    """In the cache: every checkout on the machine shares it."""
    return paths.cache_dir() / "qemu" / "deb"


def build() -> Path:
    """The package, made unless the cache has it; its path."""
    binary = qemubuild.ensure()
    prov = qemubuild.provenance()
    installed = installed_version()    # ensure() refused a system without
    name, source_version = qemubuild.installed_source()
    version = lab_version(installed, prov["build"])
    deb = output_dir() / (f"{qemubuild.PACKAGE}_"
                          f"{without_epoch(version)}_amd64.deb")
    if deb.is_file():
        return deb
    with locked(f"qemu-deb-{prov['build']}"):
        if not deb.is_file():           # or made while we waited
            _make(deb, binary, installed, prov["build"],
                  f"{name} ({source_version})")
    info(f"QEMU package: {deb} (version {version})")
    return deb


def _make(deb: Path, binary: Path, installed: str, build: str,
          source: str) -> None:
    work = deb.parent / f"{build}.work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    _run(["dpkg-deb", "-R", str(debian_deb(installed)), "root"], work,
         "dpkg-deb -R of Debian's package")
    root = work / "root"
    target = root / "usr" / "bin" / qemubuild.BINARY
    grown_kb = (binary.stat().st_size - target.stat().st_size) // 1024
    shutil.copy2(binary, target)
    ctl = root / "DEBIAN" / "control"
    ctl.write_text(control(ctl.read_text(), installed, build, source,
                           grown_kb))
    sums = root / "DEBIAN" / "md5sums"
    rel = f"usr/bin/{qemubuild.BINARY}"
    digest = hashlib.md5(target.read_bytes()).hexdigest()
    sums.write_text("".join(
        f"{digest}  {rel}\n" if line.endswith(f"  {rel}") else line + "\n"
        for line in sums.read_text().splitlines()))
    # gzip: xz takes minutes over the 62 MB binary, on every new cache
    _run(["dpkg-deb", "--root-owner-group", "-Zgzip", "-b", "root",
          "out.deb"], work, "dpkg-deb -b")
    os.replace(work / "out.deb", deb)   # never a cut-off package
    shutil.rmtree(work, ignore_errors=True)


def install() -> str:
    """Install the package here unless it is; its version."""
    deb = build()
    installed = installed_version()
    want = lab_version(installed, qemubuild.provenance()["build"])
    if installed != want:
        _run(["dpkg", "-i", str(deb)], Path("/"), f"dpkg -i {deb}")
        info(f"installed {qemubuild.PACKAGE} {want}: LAVA's qemu jobs on "
             f"this machine run the lab's QEMU")
    return want
