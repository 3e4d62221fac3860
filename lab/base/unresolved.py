"""The comparisons declared unresolved (common/unresolved.txt): two runs
of the lab's boot count disagree on them too often for either verdict to
stand (`python3 -m lab power`, lab/docs/statistics.md)."""
from pathlib import Path

from . import metrics, paths
from .log import LabError

FILE = paths.REPO / "common" / "unresolved.txt"


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
        if key in out:
            raise LabError(f"{path}:{n}: {' '.join(key)} declared twice")
        out[key] = words[3]
    return out
