"""Which patch of a series brings each of its effects.

Input: the analysis of a matrix that ran the series' base and every
prefix of it (lab/build/prefixes.py), each prefix judged against the
base by the lab's ordinary rules.  For every verdict the whole series
shows (lower or higher, on any metric the report prints), the first
prefix that shows the same verdict, and whether every longer prefix
shows it too: "from patch 2" or "from patch 2, not at 3".
"""
from . import analysis

FINDINGS = ("lower", "higher")


def _shown(a: dict, scen: str, steps: list, metric: str) -> list:
    """Each step's shown verdict on one metric of one scenario."""
    return [a["cells"].get(f"{scen}/{s}", {}).get("vs_baseline", {}).get(
        metric, {}).get("shown", "not run") for s in steps]


def _printed_findings(a: dict, variants) -> list:
    """(scenario, metric, comparison) of every finding the report prints
    for the cells of those variants."""
    family = {id(c) for c in analysis.printed_family(a)}
    out = []
    for key in sorted(a["cells"]):
        scen, var = key.split("/")
        if var in variants:
            out += [(scen, metric, cmp) for metric, cmp in sorted(
                a["cells"][key].get("vs_baseline", {}).items())
                if id(cmp) in family and cmp.get("shown") in FINDINGS]
    return out


def table(a: dict, steps: list) -> list:
    """One row per finding of the full series (steps[-1]): scenario,
    metric, verdict, its ratio, each step's shown verdict, the first
    step (1-based) that shows it, and whether it holds from there."""
    rows = []
    for scen, metric, cmp in _printed_findings(a, steps[-1:]):
        shown = _shown(a, scen, steps, metric)
        first = shown.index(cmp["shown"]) + 1
        rows.append({"scenario": scen, "metric": metric,
                     "verdict": cmp["shown"], "ratio": cmp.get("ratio"),
                     "steps": shown, "first": first,
                     "holds": all(v == cmp["shown"]
                                  for v in shown[first - 1:])})
    return rows


def undone(a: dict, steps: list) -> list:
    """The findings of some prefix that the full series does not show
    (a later patch undoes them, or they came and went with the boots):
    scenario, metric, each step's shown verdict."""
    found = {(scen, metric) for scen, metric, _ in
             _printed_findings(a, steps[:-1])}
    rows = []
    for scen, metric in sorted(found):
        shown = _shown(a, scen, steps, metric)
        if shown[-1] not in FINDINGS:
            rows.append({"scenario": scen, "metric": metric,
                         "steps": shown})
    return rows


def markdown(rows: list, steps: list, subjects: list,
             lost: tuple = ()) -> str:
    """The attribution as a table and one line per patch; then the
    findings of a prefix that the whole series lacks (`undone`)."""
    out = ["| scenario | metric | whole series | " +
           " | ".join(f"1-{k}" for k in range(1, len(steps) + 1)) +
           " | from |", "|---" * (len(steps) + 4) + "|"]
    for r in rows:
        ratio = f" x{r['ratio']:.2g}" if r["ratio"] else ""
        where = f"patch {r['first']}" + ("" if r["holds"] else
                                         ", not kept by every later step")
        out.append(f"| {r['scenario']} | {r['metric']} | {r['verdict']}"
                   f"{ratio} | " + " | ".join(r["steps"]) + f" | {where} |")
    if not rows:
        out.append("| (the whole series shows no finding in these "
                   "scenarios) |" + " |" * (len(steps) + 3))
    out.append("")
    for k, subject in enumerate(subjects, 1):
        brought = [f"{r['scenario']} {r['metric']}" for r in rows
                   if r["first"] == k]
        out.append(f"- patch {k}, {subject}: " +
                   (", ".join(brought) if brought else "no finding first"))
    if lost:
        out += ["", "Shown by a prefix, not by the whole series:", ""]
        out += [f"- {r['scenario']} {r['metric']}: " + ", ".join(
            f"{v} at 1-{k}" for k, v in enumerate(r["steps"], 1)
            if v in FINDINGS) for r in lost]
    return "\n".join(out) + "\n"
