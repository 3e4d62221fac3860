"""A variant's kernel, ready to boot: what the build (or the fetch of a
packaged image) leaves in the cache, and what every later stage reads."""
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Built:
    variant: str
    folder: Path          # cache/kernels/<hash>/ or cache/packaged/<deb>/
    meta: dict            # its build.json

    @property
    def image(self) -> Path:
        return self.folder / self.meta.get("image", "bzImage")

    @property
    def arch(self) -> str:
        """The architecture it was built for (lab/base/arches.py)."""
        return self.meta.get("arch", "x86_64")

    @property
    def tree(self) -> Path:
        return Path(self.meta["tree"])

    @property
    def objdir(self) -> Path:
        return Path(self.meta["objdir"])

    @property
    def packaged(self) -> bool:
        """A Debian image booted as packaged (lab/build/packaged.py)."""
        return bool(self.meta.get("package"))

    @property
    def headers(self):
        """A packaged kernel's unpacked headers, which external modules
        build against; None for a kernel the lab built."""
        h = self.meta.get("headers")
        return self.folder / h if h else None
