"""The prediction table (common/predictions.txt) and its verdicts."""
from pathlib import Path

from . import paths
from .log import LabError

FILE = paths.REPO / "common" / "predictions.txt"
EXPECTED = ("lower", "higher", "same")


def load(path: Path = FILE) -> dict:
    """{(scenario, variant): {"metric", "expected", "why"}}."""
    out = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        words = line.split(None, 4)
        if len(words) < 5 or words[3] not in EXPECTED:
            raise LabError(f"{path}:{n}: expected 'scenario variant metric "
                           f"lower|higher|same why', got {line.strip()!r}")
        scen, var, metric, expected, why = words
        out[(scen, var)] = {"metric": metric, "expected": expected,
                            "why": why}
    return out


def outcome(expected: str, verdict: str) -> str:
    """confirmed, refuted or untested, from a comparison's verdict."""
    if verdict in ("lower", "higher"):
        return "confirmed" if verdict == expected else "refuted"
    if verdict == "n.s.":
        return "confirmed" if expected == "same" else "refuted"
    return "untested"
