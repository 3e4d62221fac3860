"""The comparisons declared unresolved (common/unresolved.txt): two runs
of the lab's boot count disagree on them too often for either verdict to
stand (`python3 -m lab power`, lab/docs/statistics.md)."""
from pathlib import Path

from . import metrics, paths
from .log import LabError

FILE = paths.REPO / "common" / "unresolved.txt"
SCENARIOS = paths.REPO / "common" / "scenarios"


def load(path: Path = None) -> dict:
    """{(scenario, variant, metric): why}, from `path` or FILE."""
    path, out = path or FILE, {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        words = line.split(None, 3)
        if len(words) < 4 or words[2] not in metrics.BY_NAME:
            raise LabError(f"{path}:{n}: expected 'scenario variant metric "
                           f"why' with a metric of lab/base/metrics.py, "
                           f"got {line.strip()!r}")
        key = tuple(words[:3])
        unknown = _unknown(*key[:2])
        if unknown:
            raise LabError(f"{path}:{n}: {unknown}")
        if key in out:
            raise LabError(f"{path}:{n}: {' '.join(key)} declared twice")
        out[key] = words[3]
    return out


def _unknown(scenario: str, variant: str) -> str:
    """What in a declaration names nothing in the tree, or ""."""
    if not (paths.VARIANTS_DIR / variant).is_dir():
        return f"no variant {variant!r} under variants/"
    # a sweep's rate (nic-sweep-10k) is named after its file
    stems = [f.stem for f in SCENARIOS.glob("*.scenario")]
    if not any(scenario == s or scenario.startswith(s + "-")
               for s in stems):
        return f"no scenario {scenario!r} under common/scenarios/"
    return ""
