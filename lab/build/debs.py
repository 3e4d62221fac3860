"""Debian's guest programs for an architecture other than the host's.

An arm64 guest runs the same Debian 12 programs as the x86 one
(initramfs.PROGRAMS), taken from Debian's arm64 packages: apt, with a
configuration of the lab's own (arm64 package lists, an empty dpkg
status, a download folder in the cache), downloads the packages and
everything they depend on, and dpkg-deb unpacks each into one folder.
Nothing is installed and the system's apt and dpkg are not touched.
The folder is kept by the package list and Debian's release; a guest
takes its programs from it with the libraries readelf names for them.
"""
import hashlib
import shutil
import subprocess
from pathlib import Path

from ..base import paths
from ..base.arches import Arch
from ..base.log import LabError, info
from . import step
from .cachelock import locked
from .kernel import check_disk

# Debian's archive for a private apt configuration: "deb" lists of one
# architecture (here), "deb-src" for sources (lab/build/qemubuild.py).
SOURCES = """Types: {types}
URIs: http://deb.debian.org/debian
Suites: {codename} {codename}-updates
Components: main
{architectures}Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: {types}
URIs: http://deb.debian.org/debian-security
Suites: {codename}-security
Components: main
{architectures}Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def sources(types: str, codename: str, architecture: str = "") -> str:
    """A deb822 sources file of Debian's archive for `codename`."""
    return SOURCES.format(types=types, codename=codename,
                          architectures=f"Architectures: {architecture}\n"
                          if architecture else "")


NEEDED_GB = 1
UNPACKED = "root"


def release() -> str:
    """The host's Debian release (bookworm): whose packages and sources
    the lab takes."""
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            return line.split("=", 1)[1].strip('"')
    raise LabError("/etc/os-release has no VERSION_CODENAME: not Debian?")


def unpacked(arch: Arch, packages: list) -> Path:
    """A folder holding `packages` of Debian's `arch` and everything they
    depend on, unpacked; downloaded once."""
    codename = release()
    key = hashlib.sha256(f"{arch.debian_arch} {codename} "
                         f"{' '.join(sorted(packages))}".encode()).hexdigest()
    out = paths.cache_dir() / "debs" / f"{arch.debian_arch}-{key[:16]}"
    if (out / UNPACKED).is_dir():
        return out / UNPACKED
    with locked(f"debs-{out.name}"):
        if (out / UNPACKED).is_dir():
            return out / UNPACKED
        check_disk(paths.cache_dir(), NEEDED_GB, "Debian's guest packages")
        info(f"guest programs: downloading Debian {codename}'s "
             f"{arch.debian_arch} packages ({', '.join(packages)}) and "
             f"their dependencies")
        work = out.with_name(out.name + ".work")
        shutil.rmtree(work, ignore_errors=True)
        debs = _download(arch, packages, codename, work)
        root = work / UNPACKED
        for deb in debs:
            step.run(["dpkg-deb", "-x", str(deb), str(root)], work,
                     f"dpkg-deb -x {deb.name}", work / "unpack.log",
                     prefix="guest programs: ")
        out.mkdir(parents=True, exist_ok=True)
        root.rename(out / UNPACKED)
        (out / "packages.txt").write_text(
            "\n".join(sorted(d.name for d in debs)) + "\n")
        shutil.rmtree(work, ignore_errors=True)
    return out / UNPACKED


def _download(arch: Arch, packages: list, codename: str,
              work: Path) -> list:
    apt = work / "apt"
    for d in ("sources", "lists/partial", "archives/partial"):
        (apt / d).mkdir(parents=True)
    (apt / "status").write_text("")
    (apt / "sources" / "debian.sources").write_text(
        sources("deb", codename, arch.debian_arch))
    opts = ["-o", "Dir::Etc::SourceList=/dev/null",
            "-o", f"Dir::Etc::SourceParts={apt / 'sources'}",
            "-o", f"Dir::State::Lists={apt / 'lists'}",
            "-o", f"Dir::State::status={apt / 'status'}",
            "-o", f"Dir::Cache::Archives={apt / 'archives'}",
            "-o", f"Dir::Cache={apt}",
            "-o", f"APT::Architecture={arch.debian_arch}",
            "-o", f"APT::Architectures::={arch.debian_arch}",
            "-o", "APT::Sandbox::User=root", "-o", "Debug::NoLocking=1"]
    run = lambda cmd, what, log: step.run(  # noqa: E731
        cmd, work, what, work / log, prefix="guest programs: ")
    run(["apt-get", *opts, "update"], "apt-get update of Debian's "
        f"{arch.debian_arch} lists (are Debian's mirrors reachable?)",
        "apt-update.log")
    run(["apt-get", *opts, "install", "-y", "-q", "--download-only",
         "--no-install-recommends", *packages],
        f"apt-get download of {' '.join(packages)} ({arch.debian_arch})",
        "apt-download.log")
    debs = sorted((apt / "archives").glob("*.deb"))
    if not debs:
        raise LabError(f"guest programs: apt downloaded no {arch.debian_arch} "
                       f"packages into {apt / 'archives'}")
    return debs


def needed_libraries(root: Path, binary: Path, arch: Arch) -> dict:
    """{guest path: host file} of the shared libraries (and loader) a
    dynamic binary unpacked in `root` needs, followed through the
    libraries' own needs; {} for a static one."""
    found, todo = {}, [binary]
    dirs = [f"lib/{arch.triplet}", f"usr/lib/{arch.triplet}", "lib",
            "usr/lib"]
    while todo:
        names, interp = _dynamic(todo.pop())
        if interp and interp.lstrip("/") not in found:
            found[interp.lstrip("/")] = resolve(root, interp.lstrip("/"))
        for name in names:
            guest = next((f"{d}/{name}" for d in dirs
                          if (root / d / name).exists()), None)
            if guest is None:
                raise LabError(f"{binary.relative_to(root)}: library {name} "
                               f"not in Debian's {arch.debian_arch} packages "
                               f"unpacked in {root}")
            if guest not in found:
                found[guest] = resolve(root, guest)
                todo.append(found[guest])
    return found


def resolve(root: Path, guest: str) -> Path:
    """The file a guest path names inside `root`, following symlinks
    there (an absolute link points into the guest's tree, not the
    host's)."""
    path = root / guest
    for _ in range(20):
        if not path.is_symlink():
            if not path.is_file():
                raise LabError(f"{guest}: not in Debian's packages "
                               f"unpacked in {root}")
            return path
        target = Path(path.readlink())
        path = (root / str(target).lstrip("/")) if target.is_absolute() \
            else path.parent / target
    raise LabError(f"{root / guest}: too many levels of symbolic links")


def _dynamic(binary: Path) -> tuple:
    """(NEEDED sonames, program interpreter) of an ELF file, by readelf
    (which reads any architecture's)."""
    r = subprocess.run(["readelf", "-d", "-l", "-W", str(binary)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise LabError(f"readelf {binary}: {r.stderr.strip()}")
    names, interp = [], None
    for line in r.stdout.splitlines():
        if "(NEEDED)" in line and "[" in line:
            names.append(line.rsplit("[", 1)[1].rstrip("]"))
        elif "[Requesting program interpreter:" in line:
            interp = line.rsplit(":", 1)[1].strip().rstrip("]")
    return names, interp
