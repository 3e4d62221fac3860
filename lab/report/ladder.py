"""The ladder: one matrix measured in several media, each verdict
followed from today's emulator toward a machine (lab/docs/medium.md).

A result that keeps its direction and size as the medium changes (the
clock shared or parallel, the instruction 8 ns or 0.5 ns) is about the
kernels; one that moves is about the medium, and its trajectory says
which way a machine would take it.  Each rung is an ordinary report of
its own (its runs, its A/A control, the rule unchanged); this page only
sets their verdicts side by side, so every number in it is one of theirs.
"""
from pathlib import Path

from ..base import figures, store
from ..base.log import LabError

DIRECTIONS = ("lower", "higher")


def verdicts(analysis: dict) -> dict:
    """{(scenario/variant, base, metric): (ratio, verdict)} of one rung's
    report, every comparison it made."""
    out = {}
    for cell, values in analysis.get("cells", {}).items():
        for key, metrics in values.items():
            if not key.startswith("vs_") or not isinstance(metrics, dict):
                continue
            for metric, v in metrics.items():
                if isinstance(v, dict) and "shown" in v:
                    out[(cell, key[3:], metric)] = (v.get("ratio"),
                                                    v["shown"],
                                                    v.get("verdict"))
    return out


def trajectory(shown: list) -> str:
    """What the rungs, emulator first, do to one verdict (each rung's
    test's direction: a finding the rule withheld keeps it)."""
    found = [s for s in shown if s is not None]
    ways = {s for s in found if s in DIRECTIONS}
    if len(ways) > 1:
        return "changes sign"
    if not found or not ways:
        return "none in any medium"
    first, last = found[0] in DIRECTIONS, found[-1] in DIRECTIONS
    if first and not last:
        return "not found on the last rung"
    if last and not first:
        return "appears"
    if all(s in DIRECTIONS for s in found):
        return "holds"
    return "comes and goes"


def _ratio(r) -> str:
    return "-" if r is None else f"x{r:.3g}"


def rows(rungs: list) -> list:
    """[(cell, base, metric, [(ratio, shown) or None per rung], what
    happens)], in cell order."""
    each = [verdicts(a) for _, a in rungs]
    lead = {}
    for _, a in rungs:
        lead.update(a.get("lead", {}))
    # each cell's lead metric, and any other that some rung found moved
    keys = sorted(k for k in set().union(*each)
                  if k[2] == lead.get(k[0].split("/")[0], "p99") or
                  any((v.get(k) or (0, "", ""))[2] in DIRECTIONS
                      for v in each))
    out = []
    for k in keys:
        per = [v.get(k) for v in each]
        what = trajectory([(p[2] or p[1]) if p else None for p in per])
        held = [name for (name, _), _a in rungs]
        withheld = [n for n, p in zip(held, per)
                    if p and p[1] != p[2] and p[2] in DIRECTIONS]
        if withheld:
            what += f" (withheld by the rule on {', '.join(withheld)})"
        out.append((*k, [p[:2] if p else None for p in per], what))
    return out


def markdown(rungs: list, command: str) -> str:
    names = [name for name, _ in rungs]
    lines = ["# The ladder: each verdict as the medium approaches a "
             "machine", "",
             "Rungs, emulator first: " + "; ".join(
                 f"`{n}` ({m})" for n, m in names) + ".  Each rung is a "
             "report of its own, judged by the lab's rule unchanged; a "
             "cell reads `xR verdict`, R the kernel's median over its "
             "base's.", "",
             "| cell | against | metric | " +
             " | ".join(n for n, _ in names) + " | as the medium "
             "approaches a machine |",
             "|---|---|---|" + "---|" * len(names) + "---|"]
    for cell, base, metric, per, what in rows(rungs):
        shown = [f"{_ratio(p[0])} {p[1]}" if p else "not run"
                 for p in per]
        lines.append(f"| {cell} | {base} | {metric} | "
                     + " | ".join(shown) + f" | {what} |")
    lines += ["", f"Made by `{command}`.", ""]
    return "\n".join(lines)


def picture(rungs: list, out: Path) -> Path:
    """Each lead verdict's ratio, rung by rung: a line per cell, filled
    where the rung's rule found a difference."""
    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(10, 5.5))
    xs = range(len(rungs))
    for cell, base, metric, per, what in rows(rungs):
        ys = [p[0] if p and p[0] else float("nan") for p in per]
        line, = ax.plot(xs, ys, alpha=0.6)
        for x, p in zip(xs, per):
            if p and p[0]:
                ax.plot(x, p[0], "o", color=line.get_color(),
                        fillstyle="full" if p[1] in DIRECTIONS else "none")
        ax.annotate(f"{cell} {metric}", (xs[-1], ys[-1]), fontsize=7,
                    xytext=(4, 0), textcoords="offset points")
    ax.set_yscale("log")
    ax.axhline(1, color="grey", lw=0.8)
    ax.set_xticks(list(xs), [f"{n}\n{m}" for (n, m), _ in rungs],
                  fontsize=8)
    ax.set_ylabel("kernel's median / its base's (log)")
    ax.set_title("Each verdict along the ladder (filled: a difference "
                 "the rule found)")
    fig.tight_layout()
    path = out / "ladder.png"
    figures.save(fig, path)
    return path


def write(reports: list, out: Path, command: str) -> Path:
    """The ladder page of `reports`, [(medium setting, its medium in
    words, report folder)], emulator first, into `out`."""
    rungs = []
    for name, medium, folder in reports:
        f = Path(folder) / "data" / "analysis.json"
        try:
            rungs.append(((name, medium), store.read_json(f)))
        except (OSError, ValueError) as e:
            raise LabError(f"{f}: unreadable ({e}); the rung's report is "
                           f"written by `python3 -m lab compare --medium "
                           f"{name}`") from None
    out.mkdir(parents=True, exist_ok=True)
    text = markdown(rungs, command)
    text += "\n![Each verdict along the ladder](ladder.png)\n\nThe " \
        "rungs' reports: " + ", ".join(
            f"[`{name}`](../{Path(folder).name}/)" for name, _, folder
            in reports) + ".\n"
    picture(rungs, out)
    store.write_text(out / "README.md", text)
    return out
