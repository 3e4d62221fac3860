"""Two reports of the same matrix side by side: were they made the same
way, and do their verdicts agree?

`python3 -m lab replicate A B` (`make replicate A=... B=...`) reads each
report's data/ (the runs' summaries and analysis.json).  First what
differs in how they were made, per run of a cell and boot present in
both: the plan script, the scenario file, the plan's parameters (the
cyclictest line among them; the boots' own phase seeds aside), the
kernel, the initramfs (the test module and the guest's tools), the
QEMU build and setting, the guest's size; then, as notes, the lab's
commit and the host CPU.  Two reports are a repeat only where none of
the first kind differs: the lab says which did otherwise.  Then, per
comparison both reports print (each cell's lead metric and its cost
metrics against the cell's base), whether the verdicts agree, with the
rate, and each disagreement: both reports judged again under the lab's
current rules (`rejudged`), so that a rule changed between them does
not count as a disagreement.
"""
import copy
import gzip
import hashlib
import json
import zlib
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from ..base import medium, paths, predictions
from . import analysis, results
from .analysis import published_verdict
from ..base.log import LabError

# plan parameters that differ between boots by design
PER_BOOT = {"PHASE_SEED", "PHASE_US", "BG_PHASE_US"}
# the phases after the measurement that explain it, in one boot a cell
# (lab/run/scenario.py, plan_env's `explained`): a boot with them and a
# boot without are made alike; two boots with them must agree
EXPLAINING = {"PROBE_ARGS", "PROBE_MODULE_ARGS", "TRACE", "TIMERLAT"}
# their parameters, set in every boot's plan but used by an explained
# one only, and the scenario keys that give them
EXPLAINING_ONLY = EXPLAINING | {"TRACE_DURATION"}
EXPLAINING_KEYS = {"probe", "probe_module", "trace", "trace_duration",
                   "timerlat"}
# what makes two runs the same measurement, and what is only noted
PLAN_KEYS = ("plan script", "scenario file", "plan parameters", "kernel",
             "initramfs", "QEMU build", "setting", "medium", "guest size")
# what no caller may declare alike: runs of two media measure two
# machines (lab/base/medium.py)
NEVER_ALIKE = ("medium",)
NOTE_KEYS = ("lab commit", "host CPU")


def report_folder(name: str) -> Path:
    """A report folder: a path, or a name under reports/."""
    for p in (Path(name), paths.REPO / "reports" / name):
        if (p / "data" / "analysis.json").is_file():
            return p
    raise LabError(f"{name}: not a report folder (no data/analysis.json "
                   f"there or under reports/)")


def _initrd(command: str) -> str:
    words = command.split()
    return Path(words[words.index("-initrd") + 1]).name \
        if "-initrd" in words else ""


def explained(run: dict) -> bool:
    """Whether the run had the explaining phases (trace, rtla, probe)."""
    return any(run.get("plan_env", {}).get(k) for k in EXPLAINING)


def how_made(run: dict, phases: bool = True,
             measurement: bool = False) -> dict:
    """The run's provenance, key by key (PLAN_KEYS, NOTE_KEYS); "not
    recorded" where its report predates the record.  Without `phases`,
    the plan parameters leave the explaining phases out; with
    `measurement` the scenario file and the plan parameters say only how
    the measurement ran (what a pool reads of a boot)."""
    made = run.get("made", {})
    left_out = PER_BOOT | (EXPLAINING_ONLY if measurement else
                           set() if phases else EXPLAINING)
    env = {k: v for k, v in run.get("plan_env", {}).items()
           if k not in left_out}
    text = made.get("scenario_text", "")
    unknown = UNKNOWN
    return {
        "plan script": made.get("plan_sha256", "")[:12] or unknown,
        "scenario file": hashlib.sha256(_how_a_boot_runs(
            text, measurement).encode()).hexdigest()[:12]
        if text else unknown,
        "plan parameters": json.dumps(env, sort_keys=True),
        "kernel": run.get("kernel", {}).get("hash", "")[:12] or unknown,
        "initramfs": _initrd(run.get("qemu", {}).get("command", "")) or
        unknown,
        "QEMU build": run.get("qemu", {}).get("accel", {}).get(
            "emulator", {}).get("build") or "Debian's",
        "setting": run.get("qemu", {}).get("accel", {}).get("setting") or
        run.get("accel", ""),
        "medium": medium.of(run.get("qemu", {}).get("accel", {})),
        "guest size": f"{run.get('cpus', 2)} vCPUs, "
                      f"{run.get('memory_mb', 1024)} MB",
        "lab commit": made.get("lab_commit") or unknown,
        "host CPU": run.get("qemu", {}).get("host_cpu", unknown),
    }


def _how_a_boot_runs(scenario_text: str, measurement: bool = False) -> str:
    """A scenario file without what does not change a boot: comments,
    blank lines, and the keys that say which matrix runs it and how its
    boots are counted and judged (NOT_HOW_A_BOOT_RUNS); with
    `measurement`, the explaining phases' keys too."""
    left_out = NOT_HOW_A_BOOT_RUNS | (EXPLAINING_KEYS if measurement
                                      else set())
    return "\n".join(
        line.strip() for line in scenario_text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
        and line.split("=", 1)[0].strip() not in left_out)


# scenario keys that say whether the default matrix runs a scenario,
# how many boots a cell gets, and the metrics its report leads with and
# judges beside the lead: not how one boot runs
NOT_HOW_A_BOOT_RUNS = {"default", "boots", "lead", "tail"}


def read_data(f: Path):
    """A JSON file of a report's data/, gzip'd or not; a damaged one
    (a copy cut short: once an EOFError from replicate and pool) named
    in one line."""
    try:
        raw = f.read_bytes()
        return json.loads(gzip.decompress(raw) if f.suffix == ".gz"
                          else raw)
    except (OSError, EOFError, zlib.error, ValueError) as e:
        raise LabError(f"{f}: unreadable ({e}); a report's data/ is "
                       f"written again from its results by `python3 -m "
                       f"lab compare`") from None


def _stored(r, f: Path) -> dict:
    """A run summary as a report stores it (`r`, read from `f`), read
    back as results.summarize made it: JSON made the histograms'
    microsecond keys strings.  Its fields are checked as a run.json's
    are (results.FIELDS): a wrong type met later stopped a comparison
    with a TypeError."""
    if not isinstance(r, dict):
        raise LabError(f"{f}: not a run summary (a JSON object)")
    missing = [k for k in ("variant", "scenario", "boot") if k not in r]
    if missing:
        raise LabError(f"{f}: no {missing[0]}; not a run summary")
    results.check_fields(r, str(f))
    for k in ("histogram", "traced_histogram"):
        if r.get(k):
            try:
                r[k] = {int(us): n for us, n in r[k].items()}
            except (AttributeError, TypeError, ValueError):
                raise LabError(f"{f}: {k} is {str(r[k])[:40]}, not "
                               f"{{microseconds: count}}") from None
    return r


def _load_runs(folder: Path, an: dict = None) -> dict:
    """{(variant, scenario, boot): run summary} of a report's data/, or
    of the reports a pool names (`an`: the folder's analysis, where
    already read)."""
    runs = {}
    for f in sorted((folder / "data").glob("*-boot*.json*")):
        r = _stored(read_data(f), f)
        runs[(r["variant"], r["scenario"], r["boot"])] = r
    if runs:
        return runs
    if an is None:
        f = folder / "data" / "analysis.json"
        an = read_data(f) if f.is_file() else {}
    return _pooled_runs(folder, an.get("pooled", []),
                        an.get("pooled_sources"))


def runs_digest(folder: Path) -> str:
    """sha256 over a report's run summaries (data/): what a pool records
    of each report it pools, to find them again unchanged."""
    h = hashlib.sha256()
    for f in sorted((folder / "data").glob("*-boot*.json*")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _pooled_runs(folder: Path, pooled: list, sources: dict = None) -> dict:
    """A pool's runs (lab/analyse/pool.py), read from the reports it
    names, with the boot numbers of the pool.  `sources`: {report name:
    {path, sha256}} as the pool recorded them (pools made before it
    named only the reports beside them)."""
    sources = sources or {}
    read, runs = {}, {}
    for p in pooled:
        name = p["from"]
        if name not in read:
            where = sources.get(name, {})
            source = paths.REPO / where["path"] if where.get("path") \
                else folder.parent / name
            if not (source / "data").is_dir():
                raise LabError(f"{folder}: pools the runs of {source}, "
                               f"which is not there")
            if where.get("sha256") and runs_digest(source) != \
                    where["sha256"]:
                raise LabError(f"{folder}: pools the runs of {source} as "
                               f"they were when pooled, and they have "
                               f"changed (another report of that name, or "
                               f"remade): pool again")
            read[name] = _load_runs(source)
        run = read[name][(p["variant"], p["scenario"], p["from_boot"])]
        runs[(p["variant"], p["scenario"], p["boot"])] = dict(
            run, boot=p["boot"])
    return runs


class Loaded(NamedTuple):
    """A report read once: {(variant, scenario, boot): run summary}, its
    analysis, its folder."""
    runs: dict
    an: dict
    folder: Path


def load(folder: Path, an: dict = None) -> Loaded:
    """A report's runs and analysis (`an`: the analysis, where it is not
    yet written)."""
    if an is None:
        an = read_data(folder / "data" / "analysis.json")
    return Loaded(_load_runs(folder, an), an, folder)


UNKNOWN = "not recorded"


def differences(a: dict, b: dict, measurement: bool = False) -> dict:
    """{key: [(cell, value in A, value in B)]} over the runs both hold:
    where they differ, or where either side did not record it (the same
    cannot be shown then).  With `measurement`, only what the
    measurement depends on (a pool's question: the explaining phases
    run after it)."""
    out = defaultdict(list)
    for cell in sorted(set(a) & set(b)):
        phases = explained(a[cell]) and explained(b[cell])
        ma, mb = (how_made(r, phases, measurement) for r in (a[cell],
                                                             b[cell]))
        for key in PLAN_KEYS + NOTE_KEYS:
            if ma[key] != mb[key] or UNKNOWN in (ma[key], mb[key]):
                out[key].append((cell, ma[key], mb[key]))
    return dict(out)


def rejudged(a: dict) -> dict:
    """A published analysis with its verdicts made again under the lab's
    current rules (analysis.judge), so that two reports made under
    different rules compare alike; one too old for today's rules (no
    `bases`, or a cell without its values) keeps its printed verdicts.
    A metric the report predates (in no cell) is left unjudged, unless
    a scenario leads with it or names it as its tail."""
    fresh = analysis.fill_derived(copy.deepcopy(a))
    cells = fresh["cells"]
    had = set().union(*(c.get("per_boot", {}) for c in cells.values()))
    needed = (set(analysis.BOOT_METRICS) & had) | {
        m for key in cells for m in (
            analysis.lead_of(fresh, key.split("/")[0]),
            *fresh.get("tail", {}).get(key.split("/")[0], ()))
        if m in analysis.BOOT_METRICS}
    if not ("bases" in fresh and "withheld" in fresh and all(
            needed <= set(c.get("per_boot", ())) and "cost" in c
            for c in cells.values())):
        return a
    for c in fresh["cells"].values():
        for k in ("vs_baseline", "vs_other_generation", "prediction"):
            c.pop(k, None)
    return analysis.judge(fresh, predictions.load())


def verdicts(a: dict, b: dict) -> list:
    """(cell key, metric, A's verdict, B's verdict) for every comparison
    both reports print: the lead metric and every cost metric."""
    out = []
    for key in sorted(set(a["cells"]) & set(b["cells"])):
        scen = key.split("/")[0]
        va = a["cells"][key].get("vs_baseline", {})
        vb = b["cells"][key].get("vs_baseline", {})
        lead = a.get("lead", {}).get(scen, "p99")
        names = [lead] + sorted(m for m in va if m in
                                a["cells"][key].get("cost", {}))
        for m in names:
            if m in va and m in vb:
                out.append((key, m, published_verdict(va[m]),
                            published_verdict(vb[m])))
    return out


def _cell(cell) -> str:
    variant, scenario, boot = cell
    return f"{scenario}/{variant} boot {boot}"


def shared_runs(a: dict, b: dict) -> list:
    """Runs of A that are runs of B too (one results folder reported
    twice, or a pool and a run in it: the same boot of a cell, known by
    its phase seed, whatever its number), not repeats."""
    def seed(run):
        return run.get("phase_seed",
                       run.get("plan_env", {}).get("PHASE_SEED"))
    in_b = {(v, s, seed(r)) for (v, s, _), r in b.items()
            if seed(r) is not None}
    return [c for c in sorted(a) if (c[0], c[1], seed(a[c])) in in_b]


def is_repeat(a: dict, b: dict, measurement: bool = False,
              alike: tuple = ()) -> bool:
    """Runs of A and B: some in common, all made the same way (but for
    the keys `alike`, declared to measure alike), none the same run."""
    return bool(set(a) & set(b)) and not shared_runs(a, b) and not any(
        k in PLAN_KEYS and k not in alike
        for k in differences(a, b, measurement))


def earlier_repeats(here: Loaded) -> list:
    """The other reports under reports/ that repeat some of `here`'s runs
    the same way, newest first, each read once (Loaded): where a new
    report's verdicts can be checked against an earlier one's."""
    # the compared cells: a report that shares only a base's runs has
    # no verdict to check against
    cells = {k for k, c in here.an["cells"].items() if "vs_baseline" in c}
    out = []
    for data in sorted((paths.REPO / "reports").glob("20*/data"),
                       reverse=True):
        # analysis.json alone first: most reports share no cell, and
        # their runs need not be read
        f = data / "analysis.json"
        if data.parent.resolve() == here.folder.resolve() or \
                not f.is_file():
            continue
        an = read_data(f)
        if cells & {k for k, c in an["cells"].items()
                    if "vs_baseline" in c}:
            other = load(data.parent, an)
            if is_repeat(here.runs, other.runs):
                out.append(other)
    return out


def unreplicated(here: dict, others: list) -> list:
    """The findings (lower or higher) that a report's analysis (`here`,
    made under today's rules) and earlier repeats of it (Loaded) do not
    share, theirs judged again under today's rules: {report: the other's
    name, cell, metric, here, there}."""
    out = []
    for other in others:
        there = rejudged(other.an)
        out += [{"report": other.folder.name, "cell": key, "metric": m,
                 "here": x, "there": y}
                for key, m, x, y in verdicts(here, there)
                if x != y and {"lower", "higher"} & {x, y}]
    return out


def text(name_a: str, name_b: str, labels: tuple = ()) -> str:
    """The replicate table of two reports; `labels` name them where
    their folders do not (a report made from a results folder)."""
    return table(load(report_folder(name_a)), load(report_folder(name_b)),
                 labels)


def table(a: Loaded, b: Loaded, labels: tuple = ()) -> str:
    """The replicate table of two reports already read."""
    la, lb = labels or (a.folder.name, b.folder.name)
    (runs_a, an_a, _), (runs_b, an_b, _) = a, b
    common = set(runs_a) & set(runs_b)
    lines = [f"# Replicate: A = {la}, B = {lb}", "",
             f"Runs of the same cell and boot in both: {len(common)} "
             f"({len(runs_a)} in A, {len(runs_b)} in B).", "",
             "## How they were made", ""]
    diff = differences(runs_a, runs_b)
    for key in (PLAN_KEYS + NOTE_KEYS) if common else ():
        if key not in diff:
            lines.append(f"- {key}: the same in every run")
            continue
        cell, va, vb = diff[key][0]
        more = len(diff[key]) - 1
        word = "not recorded" if UNKNOWN in (va, vb) else "differs"
        lines.append(f"- **{key} {word}** in {len(diff[key])} runs, "
                     f"e.g. {_cell(cell)}: A `{va}`, B `{vb}`" +
                     (f" (and {more} more)" if more else ""))
    plan_diff = [k for k in PLAN_KEYS if k in diff]
    same_runs = shared_runs(runs_a, runs_b)
    why = (", ".join(plan_diff) + " differ or were not recorded"
           if plan_diff else f"{len(same_runs)} runs are the same runs "
           f"in both (e.g. {_cell(same_runs[0])}): the same measurement "
           f"reported twice" if same_runs else "no run in common")
    lines += ["", ("**A repeat**: the same plan, scenarios, kernels, "
                   "initramfs, emulator and guest size; only the boots' "
                   "phases differ." if not plan_diff and common and
                   not same_runs else "**Not a repeat**: " + why +
                   "; the agreement below compares different "
                   "measurements."), "", "## Verdicts", "",
              "Both reports' verdicts as the lab's current rules give "
              "them (`lab/docs/statistics.md`), whatever rules each "
              "report was printed under.", ""]
    again_a, again_b = rejudged(an_a), rejudged(an_b)
    pairs = verdicts(again_a, again_b)
    same = [p for p in pairs if p[2] == p[3]]
    leads = [p for p in pairs if p[1] == an_a.get("lead", {}).get(
        p[0].split("/")[0], "p99")]
    found = [p for p in pairs if "lower" in (p[2], p[3]) or
             "higher" in (p[2], p[3])]
    lines.append(f"{len(same)} of {len(pairs)} comparisons agree"
                 + (f" ({100 * len(same) / len(pairs):.1f}%)" if pairs
                    else "") +
                 f"; lead metrics {sum(p[2] == p[3] for p in leads)} of "
                 f"{len(leads)}; findings (lower or higher in either) "
                 f"{sum(p[2] == p[3] for p in found)} of {len(found)}.")
    toss = [(k, m) for k, m, x, y in pairs if x == y == "unresolved"]
    if toss:
        def test(an, k, m):
            return an["cells"][k]["vs_baseline"][m]["verdict"]
        lines += ["", "Declared unresolved (`common/unresolved.txt`), no "
                  "finding in either; what their tests gave: " + "; ".join(
                      f"{k} {m} (A {test(again_a, k, m)}, B "
                      f"{test(again_b, k, m)})" for k, m in toss) + "."]
    differ = [p for p in pairs if p[2] != p[3]]
    if differ:
        lines += ["", f"| cell | metric | A: {la} | B: {lb} |",
                  "|---|---|---|---|"]
        lines += [f"| {k} | {m} | {x} | {y} |" for k, m, x, y in differ]
    return "\n".join(lines) + "\n"
