"""Where things live.

The repository holds only declarations (variants, config, guest sources).
Kernel trees, objects and built images are large and slow to make, so they
live in the user's cache directory, keyed by content, where a fresh clone
(as CI makes) finds and reuses them.  Run folders live in build/ inside the
checkout, which git ignores.
"""
import os
from pathlib import Path

from .log import LabError

REPO = Path(__file__).resolve().parents[2]
VARIANTS_DIR = REPO / "variants"
COMMON_CONFIG = REPO / "common" / "kernel.config"
GUEST_DIR = REPO / "guest"
BUILD_DIR = Path(os.environ.get("LAB_BUILD_DIR", REPO / "build"))

# The seeds' generation; a variant may name another (variant.conf).
GENERATION = "6.1"


def packaged_tarball(generation: str = GENERATION) -> Path:
    """Debian's linux-source-<generation> tarball (LAB_KERNEL_TARBALL
    stands in for the seeds' generation, in tests)."""
    if generation == GENERATION and os.environ.get("LAB_KERNEL_TARBALL"):
        return Path(os.environ["LAB_KERNEL_TARBALL"])
    return Path(f"/usr/src/linux-source-{generation}.tar.xz")



def cache_dir() -> Path:
    """The lab's cache: $LAB_CACHE, else $XDG_CACHE_HOME/softirq-rt-lab."""
    if os.environ.get("LAB_CACHE"):
        return _a_folder(Path(os.environ["LAB_CACHE"]), "LAB_CACHE")
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return _a_folder(Path(xdg) / "softirq-rt-lab",
                     "XDG_CACHE_HOME" if os.environ.get("XDG_CACHE_HOME")
                     else "HOME")


def _a_folder(path: Path, setting: str) -> Path:
    """`path`, a folder or one the lab can make: not if a file is in its
    place or above it, which the lab's first write into it met as a
    NotADirectoryError (issue 53); then one line naming the setting."""
    if path.is_dir():
        return path
    for p in (path, *path.parents):
        if p.is_dir():
            break
        if p.exists():
            raise LabError(f"{setting}={os.environ.get(setting, '')}: {p} "
                           f"is a file, not a folder; set LAB_CACHE to a "
                           f"folder (or one not yet made) for the lab's "
                           f"kernels and images")
    return path
