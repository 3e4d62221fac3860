"""Every prefix of a variant's series as a variant of its own (patch 1,
1-2, ..., all), for `python3 -m lab attribute`.

A prefix is written as a variant folder under a scratch root, beside a
copy of the variant's base, so the ordinary build and matrix take it:
its kernel is built in the shared tree like any variant's, and a step
rebuilds only what its patch touches.  The last step is the variant
itself, under its own name, so its kernel and runs are the ones it
always has.  A Kconfig option of the variant's fragment that a later
patch adds is left out of the earlier prefixes' fragments (the tree
does not know it yet), and the prefix's README says so.
"""
import shutil
from pathlib import Path

from . import series
from ..base import kconfig, variants
from ..base.log import LabError
from ..base.variants import Variant


def step_name(variant: Variant, k: int) -> str:
    return f"{variant.name}.{k}"


def write(variant: Variant, root: Path) -> list:
    """The base, then the prefixes 1..n (the n-th is the variant itself),
    as loaded variants under root/."""
    n = len(variant.patches)
    if n < 2:
        raise LabError(f"variant {variant.name}: {n} patch(es); attribution "
                       f"needs a series of two or more")
    if variant.kernel_variant() is not variant or variant.package:
        raise LabError(f"variant {variant.name} boots a kernel it does not "
                       f"build: it has no series to attribute")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    base_folder = variant.folder.parent / variant.base
    shutil.copytree(base_folder, root / variant.base)
    requests = kconfig.parse_fragment(variant.config)
    added_by = {}       # option -> the step whose patch adds it
    for k, patch in enumerate(variant.patches, 1):
        for opt in series.kconfig_options([patch]):
            added_by.setdefault(f"CONFIG_{opt}", k)
    for k in range(1, n + 1):
        name = variant.name if k == n else step_name(variant, k)
        folder = root / name
        folder.mkdir()
        for p in variant.patches[:k]:
            shutil.copy2(p, folder / p.name)
        (folder / "series").write_text(
            "".join(p.name + "\n" for p in variant.patches[:k]))
        kept = [r for r in requests if added_by.get(r.option, 0) <= k]
        left = [r.option for r in requests if r not in kept]
        if left:
            kconfig.write_fragment(kept, folder / "config")
        else:       # as it is: the same bytes, the same kernel hash
            shutil.copy2(variant.config, folder / "config")
        conf = variant.folder / variants.CONF
        if conf.is_file():
            shutil.copy2(conf, folder / variants.CONF)
        (folder / "README.md").write_text(
            f"# {name}\n\nPatches 1-{k} of {n} of `{variant.name}`"
            f" (`python3 -m lab attribute`).\n" +
            (f"\nLeft out of its config (a later patch adds them): "
             f"{', '.join(left)}.\n" if left else ""))
    return [variants.load(root / variant.base)] + \
        [variants.load(root / (variant.name if k == n else
                               step_name(variant, k)))
         for k in range(1, n + 1)]
