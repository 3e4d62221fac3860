"""The packaged kernel source, unpacked once into a git repository.

Every variant starts from the same commit ("packaged") of the Debian
linux-source-6.1 tarball; variants are git worktrees of it, so a series
is applied with `git am` exactly as a maintainer would, and resetting a
tree to a new series only rewrites the files that differ (make then
rebuilds only what those touch).
"""
import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..base import paths
from . import cachelock
from ..base.log import LabError, info

BASE_TAG = "packaged"


def install_hint(generation: str) -> str:
    package = f"linux-source-{generation}"
    try:
        policy = subprocess.run(["apt-cache", "policy", package],
                                capture_output=True, text=True).stdout
    except OSError:
        policy = "Candidate: unknown"
    if "Candidate:" not in policy or "Candidate: (none)" in policy:
        return (f"Debian has no package {package} here (apt-cache policy "
                f"names no candidate): name a generation Debian packages, "
                f"such as 6.1 or 6.12")
    return f"install it with `make deps` (Debian package {package})"


def tarball_digest(tarball: Path,
                   generation: str = paths.GENERATION) -> str:
    """sha256 of the tarball: the identity of 'the packaged source'."""
    if not tarball.is_file():
        raise LabError(f"packaged kernel source {tarball} not found: "
                       f"{install_hint(generation)}")
    h = hashlib.sha256()
    with open(tarball, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def kernel_version(tree: Path) -> str:
    """VERSION.PATCHLEVEL.SUBLEVEL read from a tree's top Makefile."""
    fields = {}
    makefile = tree / "Makefile"
    if not makefile.is_file():
        raise LabError(f"{tree}: no top-level Makefile; not a kernel tree")
    for line in makefile.read_text(errors="replace").splitlines()[:10]:
        m = re.match(r"^(VERSION|PATCHLEVEL|SUBLEVEL)\s*=\s*(\d+)", line)
        if m:
            fields[m.group(1)] = m.group(2)
    try:
        return "{VERSION}.{PATCHLEVEL}.{SUBLEVEL}".format(**fields)
    except KeyError:
        raise LabError(f"{makefile}: no kernel version found") from None


def git(tree: Path, *args: str, check: bool = True,
        capture: bool = True) -> subprocess.CompletedProcess:
    env = {"GIT_AUTHOR_NAME": "softirq-rt lab",
           "GIT_AUTHOR_EMAIL": "lab@localhost",
           "GIT_COMMITTER_NAME": "softirq-rt lab",
           "GIT_COMMITTER_EMAIL": "lab@localhost",
           "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
           "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
           "HOME": str(paths.cache_dir())}
    r = subprocess.run(["git", "-C", str(tree), *args], env=env,
                       text=True, capture_output=capture)
    if check and r.returncode != 0:
        raise LabError(f"git {' '.join(args)} in {tree} failed:\n"
                       f"{(r.stderr or '').strip()}")
    return r


def unpacked_source(tarball: Path = None,
                    generation: str = paths.GENERATION) -> tuple:
    """Unpack linux-source-<generation> once; return (repo, digest,
    kernel version).

    The repository is named by the tarball's digest, so a new package
    version gets a new repository and every variant rebuilds; each
    generation has its own.
    """
    tarball = Path(tarball or paths.packaged_tarball(generation))
    digest = tarball_digest(tarball, generation)
    repo = paths.cache_dir() / "source" / digest[:16]
    stamp = repo / ".git" / "lab-unpacked"
    if stamp.is_file():
        version = stamp.read_text().strip()
        return repo, digest, version

    with cachelock.locked(f"source-{digest[:16]}",
                          f"the source {tarball.name}"):
        if stamp.is_file():             # unpacked while we waited
            return repo, digest, stamp.read_text().strip()
        return repo, digest, _unpack(tarball, generation, digest, repo)


def _unpack(tarball: Path, generation: str, digest: str, repo: Path) -> str:
    """Unpack into a folder of this writer's own, then rename it into
    place: a writer killed half way leaves no half-made repository."""
    info(f"unpacking {tarball.name} (once; about 2 minutes)")
    repo.parent.mkdir(parents=True, exist_ok=True)
    for debris in repo.parent.glob(f".{repo.name}.*"):
        shutil.rmtree(debris, ignore_errors=True)   # a killed writer's
    tmp = Path(tempfile.mkdtemp(dir=repo.parent, prefix=f".{repo.name}."))
    try:
        version = _into_git(tarball, generation, digest, tmp)
        shutil.rmtree(repo, ignore_errors=True)
        tmp.rename(repo)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return version


def _into_git(tarball: Path, generation: str, digest: str,
              tmp: Path) -> str:
    r = subprocess.run(["tar", "-xJf", str(tarball), "-C", str(tmp),
                        "--strip-components=1"], capture_output=True, text=True)
    if r.returncode != 0:
        raise LabError(f"cannot unpack {tarball}: {r.stderr.strip()}: "
                       f"{install_hint(generation)}")
    version = kernel_version(tmp)
    if not version.startswith(generation + "."):
        raise LabError(f"{tarball} holds Linux {version}, the lab needs "
                       f"{generation}.x: {install_hint(generation)}")
    info(f"Linux {version}: recording it as git commit '{BASE_TAG}'")
    git(tmp, "init", "-q")
    git(tmp, "config", "core.autocrlf", "false")
    git(tmp, "config", "gc.auto", "0")
    git(tmp, "add", "-A", "-f")
    git(tmp, "commit", "-q", "-m", f"linux-source-{generation} {version}\n\n"
        f"Unpacked from {tarball.name}, sha256 {digest}")
    git(tmp, "tag", BASE_TAG)
    (tmp / ".git" / "lab-unpacked").write_text(version + "\n")
    return version
