"""Repeat runs of one plan read as one: more boots a cell.

`python3 -m lab pool A B [C...]` (`make pool REPORTS="A B"`) reads the
reports' data/ and refuses unless each measures as the first does (the
same plan, kernels, initramfs, QEMU and guest; the explaining phases
after the measurement aside; replicate.is_repeat says what differs).
`--alike KEY,... --because TEXT` sets aside differences the caller
knows not to change the measurement (a plan script that gained a hook
the pooled runs never use), and the pool's report prints both.  The boots are numbered on: the second report's boot 1
is the first's last boot + 1, and so on; each keeps the report and boot
it came from.  The first report's traces (its boot 1 of each cell) stand
for the pool, and a scenario any report withheld stays withheld.  Each
comparison is a rank test stratified by run (lab/base/stats.py): boots
are ranked against boots of the same run only.

Pooling buys power for effects that 5 boots leave borderline.  It does
not make a run a replication of itself: a finding of the pool has no
independent repeat until another run of the plan is pooled the same way.
"""
from pathlib import Path

from ..base import paths
from ..base.log import LabError
from . import analysis, replicate


def load(folders: list, alike: tuple = ()) -> tuple:
    """(every run of the reports, boots numbered on across reports, each
    with `pooled_from`: {report, boot}; each report's analysis).  Each
    report must measure as the first does (its explaining phases aside:
    the pool's come from the first); `alike`: the keys of
    replicate.PLAN_KEYS that may differ, declared by the caller to
    measure alike (with a reason the pool's report prints)."""
    if len(folders) < 2:
        raise LabError("pool: name at least two reports of one plan")
    unknown = [k for k in alike if k not in replicate.PLAN_KEYS]
    if unknown:
        raise LabError(f"pool: --alike {unknown[0]!r} is not one of "
                       f"{', '.join(replicate.PLAN_KEYS)}")
    never = [k for k in alike if k in replicate.NEVER_ALIKE]
    if never:
        raise LabError(f"pool: --alike {never[0]!r}: runs of two media "
                       f"measure two machines and are never pooled")
    loaded = [replicate.load(f) for f in folders]
    for got in loaded:
        if not got.runs:
            raise LabError(f"{got.folder}/data: no run summaries "
                           f"(<variant>-<scenario>-boot<k>.json.gz)")
    first = loaded[0].runs
    for folder, got in zip(folders[1:], loaded[1:]):
        if not replicate.is_repeat(first, got.runs, True, alike):
            differ = [k for k in replicate.differences(first, got.runs, True)
                      if k in replicate.PLAN_KEYS and k not in alike]
            why = (f"they differ in {', '.join(differ)}" if differ else
                   "they share no cell, or some of the very same runs")
            raise LabError(f"{folder}: not a repeat of {folders[0]}, so "
                           f"not pooled: {why} (`python3 -m lab replicate "
                           f"{folders[0]} {folder}` shows where)")
    names = [got.folder.name for got in loaded]
    same = {n for n in names if names.count(n) > 1}
    if same:
        raise LabError(f"pool: two reports named {same.pop()!r} (in "
                       f"different folders): a pool names each report it "
                       f"pools by its name")
    pooled, offset = [], 0
    for got in loaded:
        for (_, _, boot), r in sorted(got.runs.items()):
            pooled.append(dict(r, boot=offset + boot,
                               pooled_from={"report": got.folder.name,
                                            "boot": boot}))
        offset += max(boot for _, _, boot in got.runs)
    return pooled, [got.an for got in loaded]


def _relative(folder: Path) -> str:
    """A pooled report's path, from the repository where it is inside it
    (a clone elsewhere finds it), else as it is."""
    folder = Path(folder).resolve()
    try:
        return str(folder.relative_to(paths.REPO.resolve()))
    except ValueError:
        return str(folder)


def analyse(pooled: list, analyses: list, busy: set, lead: dict,
            tail: dict = None, alike: dict = None,
            folders: list = ()) -> dict:
    """The pooled runs analysed as one results folder would be, each
    test stratified by run (analysis.analyse reads `pooled_from`): which
    run a boot came from (a host, a day) must not pass for a difference
    of kernels."""
    traces = analyses[0].get("traces", {})
    withheld = {}
    for other in analyses:
        withheld |= other.get("withheld", {})
    a = analysis.analyse(pooled, traces, busy=busy, lead=lead, tail=tail,
                         withheld=withheld)
    a["traces"] = traces
    if alike:
        a["alike"] = alike      # {keys: set aside, because: why}
    a["pooled_sources"] = {
        f.name: {"path": _relative(f), "sha256": replicate.runs_digest(f)}
        for f in folders}
    a["pooled"] = [{"variant": r["variant"], "scenario": r["scenario"],
                    "boot": r["boot"], "from": r["pooled_from"]["report"],
                    "from_boot": r["pooled_from"]["boot"]} for r in pooled]
    return a
