"""`python3 -m lab attribute VARIANT`: which patch of a series brings
each effect.

Every prefix of the variant's series becomes a variant (lab/build/
prefixes.py) and the matrix runs the base and the prefixes on the chosen
scenarios, into build/attribute/<variant>/results (resumable like any
matrix).  The report is the ordinary one, each prefix against the base,
plus attribution.md: for every finding of the whole series, the first
prefix that shows it and whether the longer ones keep it
(lab/analyse/attribution.py).
"""
import email
import json
from pathlib import Path

from .analyse import attribution
from .build import prefixes, series
from .run import matrix
from .base import paths
from .base.log import info
from .base.variants import Variant
from .report import publish


def subject(patch: Path) -> str:
    """A format-patch file's subject without its [PATCH n/m] tag."""
    found = series.numbered(email.message_from_bytes(patch.read_bytes()))
    return found[2] if found else patch.name


def run(variant: Variant, scenarios: list, boots: int, runner, out: Path,
        command: str, descriptions: dict, busy: set, lead: dict,
        tail: dict) -> str:
    """Build and run every prefix, write the report and attribution.md
    into `out`; return attribution.md's text."""
    work = paths.BUILD_DIR / "attribute" / variant.name
    chosen = prefixes.write(variant, work / "variants")
    steps = [v.name for v in chosen[1:]]
    info(f"attribute {variant.name}: {len(steps)} steps "
         f"({', '.join(steps)}) against {chosen[0].name}, "
         f"{len(scenarios)} scenario(s) x {boots} boot(s)")
    root = work / "results"
    matrix.run(chosen, scenarios, boots, root, runner=runner)
    publish.write(root, out, descriptions, command,
                  [v.name for v in chosen], [s.name for s in scenarios],
                  busy, lead, tail)
    a = json.loads((out / "data" / "analysis.json").read_text())
    rows = attribution.table(a, steps)
    text = (f"# Which patch of {variant.name} brings each effect\n\n"
            f"Each prefix of the series against `{chosen[0].name}`, "
            f"{boots} boot(s) a cell, by the report's own rules "
            f"(report.md).  \"from patch k\": the first prefix that shows "
            f"the whole series' verdict.\n\n" +
            attribution.markdown(rows, steps,
                                 [subject(p) for p in variant.patches],
                                 attribution.undone(a, steps)))
    (out / "attribution.md").write_text(text)
    return text
