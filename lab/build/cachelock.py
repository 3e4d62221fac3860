"""One writer at a time for each item of the shared cache.

Every step that fills the cache (unpacking a source, building QEMU, a
kernel, a module, Debian's packages) may be started at once by two test
workers or two `make lab`s: each takes the item's lock, looks again
whether the item appeared while it waited, and builds in a folder of its
own that is renamed into place.
"""
import contextlib
import fcntl

from ..base import paths
from ..base.log import info


@contextlib.contextmanager
def locked(name: str, what: str = ""):
    """Hold the cache's lock `name` until the block ends; say so if
    another process holds it (`what` names the item for that line)."""
    lock_dir = paths.cache_dir() / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f"{name}.lock", "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            info(f"{what or name}: waiting for another process building it")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield
