"""The shared tree's incremental builds equal clean builds.

Every variant of a source is built in one tree and object folder, so
kbuild recompiles only what a series and its Kconfig options touch.  The
check: stultz-v5, built incrementally after baseline, against the same
variant built into an empty object folder (ccache still serves unchanged
objects; it keys on the preprocessed source and compiler options, so a
hit is what the compiler would produce).  The build is reproducible
(fixed timestamp, user, host and build number), so the images must be
byte-identical, and so must the configs.
"""
import hashlib

import pytest

from lab.build import kernel
from lab.base import arches, variants

# its tests share module fixtures: one worker runs them all
pytestmark = [pytest.mark.guest, pytest.mark.xdist_group("incremental_build")]


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def incremental():
    return kernel.build_all(variants.select("baseline,stultz-v5"))


def test_incremental_build_is_a_clean_build(incremental):
    v = variants.select("stultz-v5")[0]
    kept = incremental["stultz-v5"]
    clean = kernel.clean_build(v)
    assert (clean / ".config").read_text() == \
        (kept.folder / "config").read_text()
    assert sha256(clean / arches.X86_64.image) == sha256(kept.image), \
        "incremental and clean builds of stultz-v5 differ"
