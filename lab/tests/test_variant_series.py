"""Every variant's series, checked without a kernel build: it applies
to its packaged source with git am, its config fragment names options
the patched tree defines, and its patches are clean under checkpatch.
The boot tests build and boot only the guest variants
(conftest.guest_variants); this covers the rest on every `make check`.
Marked `guest`: it applies series in the shared trees' scratch worktrees,
under their locks."""
import subprocess

import pytest

from lab.base import kconfig, variants
from lab.build import cachelock, kernel, source
from lab.tests.conftest import make_variant

pytestmark = [pytest.mark.guest, pytest.mark.xdist_group("variant_series")]

BUILT_HERE = [v for v in variants.discover()
              if not v.get("kernel") and not v.package]


def options_not_in_tree(v) -> list:
    """Apply v's series in its source's scratch worktree; the options its
    fragment turns on that no Kconfig file of the patched tree defines
    (an option stated off may be another generation's, absent here)."""
    repo, _, _ = source.unpacked_source(v.tarball, v.source)
    with cachelock.locked(repo.name):
        scratch = kernel.scratch_tree(repo)
        kernel.apply_series(v, scratch)
        missing = []
        for r in kconfig.parse_fragment(v.config):
            if r.value == "n":
                continue
            name = r.option.removeprefix("CONFIG_")
            found = source.git(scratch, "grep", "-q", "-E",
                               rf"^\s*(menu)?config {name}\s*$",
                               "--", "*Kconfig*", check=False)
            if found.returncode != 0:
                missing.append(r.option)
    return missing


@pytest.mark.parametrize("v", BUILT_HERE, ids=lambda v: v.name)
def test_series_applies_and_its_options_exist(v):
    """Its patches apply in order (a failure names patch, file and hunk)
    and every option it turns on exists, so a misspelt or removed option
    cannot pass unbuilt."""
    assert options_not_in_tree(v) == []


def test_a_misspelt_option_is_found_without_a_build(variant_root):
    folder = make_variant(variant_root, "typo",
                          config="CONFIG_PREEMPT_RT=y\nCONFIG_PREMPT_RT=y\n")
    assert options_not_in_tree(variants.load(folder)) == \
        ["CONFIG_PREMPT_RT"]


def test_patches_pass_checkpatch_strict():
    """Every variant's patches are clean under the packaged tree's own
    scripts/checkpatch.pl --strict.  UNKNOWN_COMMIT_ID is ignored: the
    packaged source has no git history to look commit ids up in; so are
    the types a backport's variant.conf names (upstream's code as
    merged)."""
    repo, _, _ = source.unpacked_source()
    for v in variants.discover():
        ignored = ",".join(["UNKNOWN_COMMIT_ID",
                            *v.get("checkpatch_ignore").split()])
        for patch in v.patches:
            r = subprocess.run(
                ["perl", "scripts/checkpatch.pl", "--strict", "--no-tree",
                 "--ignore", ignored, str(patch.resolve())],
                cwd=repo, capture_output=True, text=True)
            assert r.returncode == 0, f"{v.name}/{patch.name}:\n" + \
                r.stdout[-2000:]
