"""Where things live.

The repository holds only declarations (variants, config, guest sources).
Kernel trees, objects and built images are large and slow to make, so they
live in the user's cache directory, keyed by content, where a fresh clone
(as CI makes) finds and reuses them.  Run folders live in build/ inside the
checkout, which git ignores.
"""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VARIANTS_DIR = REPO / "variants"
COMMON_CONFIG = REPO / "common" / "kernel.config"
GUEST_DIR = REPO / "guest"
BUILD_DIR = Path(os.environ.get("LAB_BUILD_DIR", REPO / "build"))

PACKAGED_TARBALL = Path(os.environ.get(
    "LAB_KERNEL_TARBALL", "/usr/src/linux-source-6.1.tar.xz"))
PACKAGED_NAME = "linux-source-6.1"
EXPECTED_SERIES = "6.1."


def cache_dir() -> Path:
    """The lab's cache: $LAB_CACHE, else $XDG_CACHE_HOME/softirq-rt-lab."""
    if os.environ.get("LAB_CACHE"):
        return Path(os.environ["LAB_CACHE"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "softirq-rt-lab"
