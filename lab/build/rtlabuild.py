"""rtla from Debian's linux-source-6.12, for the guests.

Debian 12's own rtla (6.1) has no timerlat auto-analysis; the rtla in
linux-source-6.12's tools/tracing/rtla has it (`timerlat --aa-only`, which
splits a latency into IRQ, softirq, thread and blocking parts) and
builds against Debian's libtracefs-dev and libtraceevent-dev.  It is
built once into cache/rtla/<source digest>/ and copied into each
guest's initramfs with its libraries; nothing is installed on the host.
"""
import functools
import os
import shutil
from pathlib import Path

from ..base import paths
from . import source, step
from .cachelock import locked
from ..base.log import LabError, info

TARBALL = Path(os.environ.get("LAB_RTLA_SOURCE",
                              "/usr/src/linux-source-6.12.tar.xz"))
PACKAGES = "linux-source-6.12 libtracefs-dev libtraceevent-dev pkg-config"
RTLA = "tools/tracing/rtla"


def ensure() -> Path:
    """The rtla binary, built unless the cache has it."""
    if not TARBALL.is_file():
        raise LabError(f"{TARBALL} not found: rtla is built from it; "
                       f"`make deps` installs {PACKAGES}")
    digest = _digest()
    out = paths.cache_dir() / "rtla" / digest[:16]
    if (out / "rtla").is_file():
        return out / "rtla"
    with locked(f"rtla-{digest[:16]}"):
        if (out / "rtla").is_file():
            return out / "rtla"
        info(f"rtla: building from {TARBALL.name} (once, under a minute)")
        work = out.with_name(out.name + ".work")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        top = _unpack_tools(work)
        step.run(["make", "-C", str(top / RTLA), f"-j{os.cpu_count() or 1}"],
                 work, f"rtla build (missing {PACKAGES}? `make deps`)",
                 work / "make.log", lines=10)
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy2(top / RTLA / "rtla", out / "rtla.tmp")
        os.replace(out / "rtla.tmp", out / "rtla")
        shutil.rmtree(work, ignore_errors=True)
    return out / "rtla"


@functools.lru_cache(maxsize=None)
def _digest() -> str:
    """The source's digest, once per process (140 MB to read)."""
    return source.tarball_digest(TARBALL)


def _unpack_tools(work: Path) -> Path:
    """Only tools/ and scripts/ of the tree: what rtla's Makefile uses."""
    top = TARBALL.name.split(".tar")[0]
    step.run(["tar", "-C", str(work), "-xf", str(TARBALL), f"{top}/tools",
              f"{top}/scripts"], work,
             f"{TARBALL}: unpacking tools/ and scripts/", lines=5)
    return work / top
