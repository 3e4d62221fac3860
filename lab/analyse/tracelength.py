"""Would a shorter trace phase explain the same worst wake-ups?

A trace phase's first N seconds after the affinity marker are what a
phase of N seconds would have recorded: the load runs through every
phase and cyclictest's threads do not know how long they will run.  So
each traced run of a results folder is explained twice, whole and cut
to its first N seconds, and the two compared the way the report uses
them: the cause of the worst wake-up, the most frequent cause over the
scenario's threshold, and the count over it.  `python3 -m lab
trace-length --results <folder> --seconds 5`.
"""
import json
from pathlib import Path

from . import results, trace
from ..base.log import LabError


def traced_runs(root: Path) -> list:
    """Run folders of `root` that hold a trace phase."""
    return sorted(d.parent for d in root.glob("**/trace.dat")
                  if (d.parent / results.TRACED).is_file())


def _summary(t: dict) -> dict:
    if "error" in t:
        return {"error": t["error"]}
    worst = t["worst"][0] if t["worst"] else {}
    return {"over": t["over"], "max_us": t["max_us"],
            "top": next(iter(t["causes"]), "none"),
            "worst": worst.get("kind", "none"),
            "agrees": t.get("agreement", {}).get("ok")}


def compare_run(run_dir: Path, seconds: float, name: str = "") -> dict:
    """The run's trace explained whole and cut to `seconds` (parsed
    once); a run whose trace or samples cannot be read says why.  `name`
    labels it (default: its folder's name)."""
    row = {"run": name or run_dir.name}
    try:
        record = json.loads((run_dir / "run.json").read_text())
        kept = results.traced_samples(run_dir)
        events = trace.parse(trace.report_text(run_dir / "trace.dat"))
    except (LabError, OSError, ValueError) as e:
        return dict(row, whole={"error": str(e)}, cut={"error": str(e)})
    whole, cut = (_summary(results.explain_traced(
        run_dir, record, kept, seconds=s, events=events))
        for s in (None, seconds))
    return dict(row, whole=whole, cut=cut)


def same(row: dict, key: str) -> bool:
    return row["whole"].get(key) == row["cut"].get(key)


def text(rows: list, seconds: float) -> str:
    ok = [r for r in rows if "error" not in r["whole"]
          and "error" not in r["cut"]]
    lines = [f"Trace phases cut to their first {seconds:g} s, against "
             f"the whole phase: {len(ok)} traced runs "
             f"({len(rows) - len(ok)} unreadable).",
             f"- worst wake-up's cause the same: "
             f"{sum(same(r, 'worst') for r in ok)} of {len(ok)}",
             f"- most frequent cause over the threshold the same: "
             f"{sum(same(r, 'top') for r in ok)} of {len(ok)}",
             f"- the cut trace's samples in their windows, p99 and max "
             f"as cyclictest's: {sum(bool(r['cut']['agrees']) for r in ok)}"
             f" of {len(ok)}",
             "", "| run | worst (whole) | worst (cut) | top (whole) | "
             "top (cut) | over (whole/cut) | max us (whole/cut) |",
             "|---|---|---|---|---|---|---|"]
    for r in ok:
        w, c = r["whole"], r["cut"]
        mark = "" if same(r, "worst") and same(r, "top") else " **differs**"
        lines.append(f"| {r['run']}{mark} | {w['worst']} | {c['worst']} | "
                     f"{w['top']} | {c['top']} | {w['over']}/{c['over']} | "
                     f"{w['max_us']}/{c['max_us']} |")
    for r in rows:
        if r not in ok:
            lines.append(f"| {r['run']} | unreadable: "
                         f"{r['whole'].get('error') or r['cut']['error']} "
                         f"| | | | | |")
    return "\n".join(lines) + "\n"
