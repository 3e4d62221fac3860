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
        if (scen, var) in out:
            raise LabError(f"{path}:{n}: a second prediction for {scen} on "
                           f"{var}: one line a cell")
        out[(scen, var)] = {"metric": metric, "expected": expected,
                            "why": why}
    return out


def outcome(expected: str, verdict: str) -> str:
    """What a comparison's verdict says of a prediction.

    confirmed: the predicted direction was found, or the kernels shown
    alike (an equivalence interval, "same") where that was predicted;
    refuted: the opposite direction, a difference where none was
    predicted, or kernels shown alike where a difference was; not
    shown: no difference found where one was predicted; consistent: no difference found where none was
    predicted (not proof of sameness with 5 boots); unresolved: a
    comparison declared so (common/unresolved.txt) whose test found a
    difference; untested: withheld or too few boots.
    """
    if verdict in ("lower", "higher"):
        return "confirmed" if verdict == expected else "refuted"
    if verdict == "same":
        return "confirmed" if expected == "same" else "refuted"
    if verdict == "n.s.":
        return "consistent" if expected == "same" else "not shown"
    if verdict == "unresolved":
        return "unresolved"
    return "untested"
