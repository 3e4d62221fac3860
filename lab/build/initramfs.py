"""The guest's initramfs: Debian's binaries, their libraries, our init.

Programs come from the host's Debian packages (busybox-static, rt-tests,
stress-ng, iperf3, trace-cmd, chrt, mpstat) with the shared libraries ldd names for
them, so the guest runs exactly the versions a kernel developer on
Debian 12 runs; a guest of another architecture (arm64) gets the same
packages of its own architecture (lab/build/debs.py).  The archive is
made with cpio (newc) and cached by the content of everything in it.
"""
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..base import arches, paths
from ..base.log import LabError
from . import debs

# (host path, Debian package that ships it)
PROGRAMS = [
    ("/bin/busybox", "busybox-static"),
    ("/usr/bin/cyclictest", "rt-tests"),
    ("/usr/bin/stress-ng", "stress-ng"),
    ("/usr/bin/iperf3", "iperf3"),
    ("/usr/bin/trace-cmd", "trace-cmd"),
    ("/usr/bin/chrt", "util-linux"),
    ("/usr/bin/mpstat", "sysstat"),
]
# Libraries glibc opens at run time, which ldd cannot name: libgcc_s
# unwinds a thread in pthread_exit() (rtla's threads end that way on 6.12
# kernels: "libgcc_s.so.1 must be installed for pthread_exit to work").
RUNTIME_LIBRARIES = [("/lib/{triplet}/libgcc_s.so.1", "libgcc-s1")]
# The lab's own guest scripts (load generators that report metrics).
GUEST_BIN = paths.GUEST_DIR / "bin"
DIRS = ["bin", "usr/bin", "proc", "sys", "dev", "tmp", "lab", "root",
        "etc", "lib/modules"]


def shared_libraries(binary: str) -> list:
    """Absolute paths of the libraries (and loader) a dynamic binary needs."""
    r = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if r.returncode != 0:        # static binaries: "not a dynamic executable"
        return []
    libs = []
    for line in r.stdout.splitlines():
        parts = line.split()
        if "=>" in parts:
            target = parts[parts.index("=>") + 1]
            if target == "not":
                raise LabError(f"{binary}: library {parts[0]} not found")
            if target.startswith("/"):
                libs.append(target)
        elif parts and parts[0].startswith("/"):
            libs.append(parts[0])
    return libs


def contents(extra: dict = None, arch=arches.X86_64) -> dict:
    """Guest path -> host file, for everything the archive holds."""
    files = {"init": paths.GUEST_DIR / "init"}
    for script in sorted(GUEST_BIN.iterdir()):
        files["usr/bin/" + script.name] = script
    if arch is not arches.X86_64:
        files.update(foreign_programs(arch))
        files.update(extra or {})
        return files
    for prog, package in PROGRAMS:
        if not Path(prog).is_file():
            raise LabError(f"{prog} not found: install Debian package "
                           f"{package} (`make deps`)")
        files[prog.lstrip("/")] = Path(prog)
        for lib in shared_libraries(prog):
            files[lib.lstrip("/")] = Path(lib)
    for lib, package in RUNTIME_LIBRARIES:
        lib = lib.format(triplet=arch.triplet)
        if not Path(lib).is_file():
            raise LabError(f"{lib} not found: install Debian package "
                           f"{package} (`make deps`)")
        files[lib.lstrip("/")] = Path(lib)
    files.update(extra or {})
    return files


def foreign_programs(arch) -> dict:
    """PROGRAMS and RUNTIME_LIBRARIES from Debian's packages of `arch`,
    with the libraries they need: {guest path: host file}."""
    wanted = PROGRAMS + RUNTIME_LIBRARIES
    root = debs.unpacked(arch, sorted({package for _, package in wanted}))
    files = {}
    for prog, _ in PROGRAMS:
        guest = prog.lstrip("/")
        files[guest] = debs.resolve(root, guest)
        files.update(debs.needed_libraries(root, files[guest], arch))
    for lib, _ in RUNTIME_LIBRARIES:
        guest = lib.format(triplet=arch.triplet).lstrip("/")
        files[guest] = debs.resolve(root, guest)
    return files


def build(extra: dict = None, name: str = "base",
          arch=arches.X86_64) -> Path:
    """Return a cached initramfs holding contents(extra) for a guest of
    `arch`."""
    files = contents(extra, arch)
    h = hashlib.sha256()
    for guest_path in sorted(files):
        h.update(guest_path.encode() + b"\0")
        h.update(Path(files[guest_path]).read_bytes())
    out = paths.cache_dir() / "initramfs" / f"{name}-{h.hexdigest()[:16]}.cpio"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    # A stage folder of this process's own, and an atomic rename: two
    # processes (pytest workers, JOBS guests) may build the same archive.
    with tempfile.TemporaryDirectory(dir=out.parent,
                                     prefix=out.stem + ".") as work:
        stage = Path(work) / "stage"
        for d in DIRS:
            (stage / d).mkdir(parents=True, exist_ok=True)
        for guest_path, host in files.items():
            dest = stage / guest_path
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(host, dest)     # follows symlinks: real content
            dest.chmod(0o755)
        (stage / "bin" / "sh").symlink_to("busybox")
        tmp = Path(work) / "archive.cpio"
        tmp.write_bytes(cpio(stage))
        tmp.rename(out)
    return out


def cpio(stage: Path) -> bytes:
    """Every file under `stage` as a newc archive owned by root, the
    format the kernel unpacks (archives concatenate)."""
    names = sorted(str(p.relative_to(stage)) for p in stage.rglob("*"))
    # cpio reads names on stdin as text and writes the archive as bytes
    r = subprocess.run(["cpio", "--quiet", "-o", "-H", "newc", "-R", "0:0"],
                       cwd=stage, input=("\n".join(names) + "\n").encode(),
                       capture_output=True)
    if r.returncode != 0:
        raise LabError(f"cpio failed: {r.stderr.decode().strip()}")
    return r.stdout
