"""A results folder analysed: every run read (lab/analyse/results.py), each
cell's per-boot values, its comparison with its base (lab/base/stats.py),
the family a report adjusts for false discoveries, and what is withheld
and why.  No text and no figures: lab/report/text.py and
lab/report/plots.py draw from what this returns, lab/report/publish.py writes
the report.
"""
import dataclasses
from collections import Counter, defaultdict
from pathlib import Path

from ..base import medium, metrics, paths, predictions, stats, unresolved
from . import results, softirqrates, stalls
from ..run import runfolder
from ..base.cores import map_on_cores
from ..base.log import LabError, warn
from ..base.textfmt import fmt_us


def _read_run(run_dir: Path):
    """(the run's summary, None) or (None, why it cannot be read)."""
    try:
        return results.summarize(run_dir), None
    except KeyError as e:
        return None, f"run.json has no {e.args[0]!r} where a run has one"
    except (OSError, ValueError, LabError) as e:
        return None, str(e)
    except (TypeError, AttributeError) as e:
        # a field of the wrong type, edited by hand or from another tool
        return None, f"run.json has a field of the wrong type ({e})"


def _first_stall(run: dict) -> dict:
    """The first stall a failed run's console reports (lab/analyse/
    stalls.py), or None."""
    console = Path(run.get("run", "")) / "console.log"
    if not run.get("run") or not console.is_file():
        return None
    return stalls.first_stall(console.read_text(errors="replace"))


def _starved(run: dict) -> dict:
    """Where RCU went without a softirq behind NET_RX in a failed run
    that sampled its softirq rates (lab/analyse/softirqrates.py), or
    None."""
    rates = run.get("softirq_rates")
    return softirqrates.starved(rates) if rates else None


def load(root: Path, variants=None, scenarios=None) -> list:
    """The summary of every run in `variants` x `scenarios` (all where
    None), read one run per host core (a trace phase takes seconds).
    Runs sit in <variant>/<scenario>/boot-<k> (lab/run/matrix.py)."""
    runs = []
    dirs = [p.parent for p in sorted(root.glob("*/*/boot-*/run.json"))
            if (not variants or p.parts[-4] in variants)
            and (not scenarios or p.parts[-3] in scenarios)]
    read = map_on_cores(_read_run, dirs, chunksize=4)
    for run_dir, (s, error) in zip(dirs, read):
        wrong = s and runfolder.misplaced(
            {**s, "scenario": {"name": s["scenario"]}}, run_dir)
        if wrong:
            raise LabError(f"{wrong}: a run is read by its folder, so the "
                           f"comparison would not be of what ran; put the "
                           f"folder back, or delete it and `python3 -m lab "
                           f"run` redoes it")
        if error is not None:
            # damaged by hand or by a failing disk: `run` redoes it
            warn(f"{run_dir}: left out, unreadable ({error}); "
                 f"`python3 -m lab run` with the same options redoes it")
            continue
        runs.append(s)
    if not runs:
        raise LabError(f"no finished runs under {root}")
    return runs


# With a waker thread (-W), a sample counts only if the waker issued the
# wake-up in time, i.e. while the handler still ran: single-threaded TCG
# sometimes does not run the waker's vCPU until the handler has ended.
WAKER_ON_TIME_US = 1500


def probe_valid(summary: dict) -> bool:
    """A probe run whose triggers mostly missed (the module's previous
    chain had not ended) did not aim at a running handler: leave it out."""
    asked = summary.get("requested", 0)
    return asked > 0 and summary.get("missed", 0) <= 0.1 * asked


def cost_values(r: dict) -> dict:
    """A run's cost metrics: its load generators' and ksoftirqd's CPU."""
    out = {m: d["value"] for m, d in r["metrics"].items()}
    out["ksoftirqd_cpu_percent"] = r["ksoftirqd_cpu_percent"]
    return out


def probe_summary(rs: list):
    """Probe figures over the cell's valid samples, or None; on CPUs of
    different sizes, where the RT task woke by capacity class."""
    probes = [r["probe"] for r in rs if r.get("probe")
              and probe_valid(r["probe"]["summary"])]
    every = [x for p in probes for x in p["samples"]]
    valid = [x for x in every if x.get("waker_us", 0) < WAKER_ON_TIME_US]
    if not valid:
        return None
    lat = sorted(x["latency_us"] for x in valid)
    out = {"samples": len(every), "valid": len(valid),
           "median_us": lat[len(lat) // 2],
           "p99_us": lat[min(len(lat) - 1, int(0.99 * len(lat)))],
           "moved": sum(x["cpu"] != x["prev_cpu"] for x in valid)
           / len(valid)}
    env = rs[0].get("plan_env", {})
    if env.get("CAPACITIES"):
        out["placement"] = placement(valid, env)
    return out


# RT tasks' utilization clamp where no sysctl sets it: the kernel's
# default, sysctl_sched_uclamp_util_min_rt_default (kernel/sched/core.c)
RT_CLAMP_DEFAULT = 1024
RT_CLAMP_SYSCTL = "kernel.sched_util_clamp_min_rt_default"


def capacity_classes(capacities: list) -> dict:
    """{capacity: class name}: little and big, and middle between where
    there are three sizes (more: by rank)."""
    sizes = sorted(set(capacities))
    names = {1: ["big"], 2: ["little", "big"],
             3: ["little", "middle", "big"]}.get(
        len(sizes), [f"size{k + 1}" for k in range(len(sizes))])
    return dict(zip(sizes, names))


def placement(samples: list, env: dict) -> dict:
    """Where the probe's RT task woke, on CPUs of different sizes: the
    share of wake-ups per capacity class, and on a CPU smaller than the
    task's clamp asks (a CPU rt_task_fits_capacity() says it does not
    fit)."""
    caps = [int(c) for c in env["CAPACITIES"].split()]
    clamp = RT_CLAMP_DEFAULT
    for setting in env.get("SYSCTL", "").split():
        name, _, value = setting.partition("=")
        if name == RT_CLAMP_SYSCTL:
            clamp = int(value)
    classes = capacity_classes(caps)
    on = Counter(classes[caps[x["cpu"]]] for x in samples)
    return {"rt_clamp": clamp,
            "share": {name: on[name] / len(samples)
                      for name in classes.values()},
            "too_small": sum(caps[x["cpu"]] < clamp for x in samples)
            / len(samples)}


def one_medium(runs: list) -> str:
    """The runs' medium (lab/base/medium.py), refused if they have two:
    a verdict between runs of two media compares the media, not the
    kernels."""
    seen = {}
    for r in runs:
        seen.setdefault(medium.of(r.get("qemu", {}).get("accel", {})),
                        r.get("run", "a run"))
    if len(seen) > 1:
        (a, run_a), (b, run_b) = list(seen.items())[:2]
        raise LabError(f"runs of two media are never compared: {run_a} "
                       f"ran in {a}, {run_b} in {b}; give each medium "
                       f"its own results folder and report")
    return next(iter(seen), "")


def analyse(runs: list, traces: dict = None, predicted: dict = None,
            busy: set = frozenset(), lead: dict = None,
            withheld: dict = None, tail: dict = None,
            named_bases: dict = None) -> dict:
    """Per cell: each boot's values; per variant: verdicts on them.
    `withheld`: scenarios withheld for reasons found elsewhere (a pool's
    other reports), beside those the traces give; `tail`: {scenario:
    the per-boot metrics judged beside its lead}; `named_bases`:
    {variant: base} compared instead of variant.conf's (`--base`,
    lab/base/variants.named_bases).  Runs pooled from
    several reports (`pooled_from`, lab/analyse/pool.py) are compared
    within their own report (`runs` in the cell, the strata).

    A boot whose cyclictest threads could not move (the affinity widening
    failed) is left out of the cell and counted.  A scenario whose traced
    worst cases the trace attribution blames on the emulator has its
    verdicts withheld.
    """
    one_medium(runs)
    traces = traces or {}
    predicted = predictions.load() if predicted is None else predicted
    ok = [r for r in runs if r["status"] == "ok"]
    by_cell = defaultdict(list)
    for r in ok:
        by_cell[(r["scenario"], r["variant"])].append(r)
    bases = {r["variant"]: base_of(r) for r in runs}
    bases.update(named_bases or {})
    # each base, then the variants compared with it; 6.1's first
    variants = sorted(bases, key=lambda v: (bases[v] != "baseline",
                                            bases[v], v != bases[v], v))
    scenarios = sorted({r["scenario"] for r in runs},
                       key=lambda s: (s != "idle", s))
    # a guest's shape: its CPUs and their sizes (capacities, on arm64)
    size = {r["scenario"]: (r.get("cpus", 2),
                            r.get("plan_env", {}).get("CAPACITIES", ""))
            for r in runs}

    def null(scen: str) -> dict:
        """The null control of scen's guest shape, on the base of the
        guest's first generation (baseline, or baseline-arm64):
        {its name: p99s}."""
        found = defaultdict(list)
        for r in ok:
            if is_null_control(r["scenario"]) and \
                    size[r["scenario"]] == size[scen] and \
                    judges_null(r) and \
                    r["affinity"]["as_asked"]:
                found[r["scenario"]].append(r["boot_values"]["p99"])
        return dict(found)
    out = {"variants": variants, "bases": bases, "scenarios": scenarios,
           **({"named_bases": dict(named_bases)} if named_bases else {}),
           # the latency metric each scenario's rows and summary lead with
           "lead": {s: (lead or {}).get(s, "p99") for s in scenarios},
           "tail": {s: list((tail or {})[s]) for s in scenarios
                    if (tail or {}).get(s)},
           # a group-sequential run's looks, where every run was made
           # under the same plan (a pool's runs are judged on all boots)
           "looks": _looks(ok),
           # the A/A and known-effect controls: {variant: its
           # handler_scale, "" for none}
           "controls": {r["variant"]: r["variant_conf"].get(
               "handler_scale", "") for r in runs
               if r.get("variant_conf", {}).get("role") == "control"},
           "cells": {},
           "probe_args": {r["scenario"]: r.get("plan_env", {}).get(
               "PROBE_ARGS", "") for r in ok},
           "module_args": {r["scenario"]: r.get("plan_env", {}).get(
               "MODULE_ARGS", "") for r in ok},
           "withheld": dict(withheld or {}) | {
               s: w for s in scenarios
               if (w := emulator_blamed(traces, s, variants, s in busy,
                                        null(s)))},
           "failed": [{**{k: r[k] for k in ("variant", "scenario", "boot",
                                            "reason")},
                       "stall": _first_stall(r),
                       "starved": _starved(r)}
                      for r in runs if r["status"] != "ok"]}
    for (scen, var), rs in sorted(by_cell.items()):
        free = sorted((r for r in rs if r["affinity"]["as_asked"]),
                      key=lambda r: r["boot"])
        values = [stats.with_derived(r["boot_values"]) for r in free]
        per_boot = {m: [b[m] for b in values] for m in BOOT_METRICS}
        cost = {}
        for r in free:
            for m, v in cost_values(r).items():
                cost.setdefault(m, []).append(v)
        c = {"boots": [r["boot"] for r in free],
             "pinned_boots": [r["boot"] for r in rs
                              if not r["affinity"]["as_asked"]],
             "seeds": [r.get("phase_seed") for r in free],
             "per_boot": per_boot, "cost": cost,
             "softirqs": {v: sum(r["softirqs"][v] for r in rs) / len(rs)
                          for v in results.VECTORS},
             "softirqs_per_s": softirq_rates(rs)}
        if all("pooled_from" in r for r in free):
            c["runs"] = [r["pooled_from"]["report"] for r in free]
        probe = probe_summary(free)
        if probe:
            c["probe"] = probe
        out["cells"][f"{scen}/{var}"] = c
    return judge(out, predicted)


def judge(out: dict, predicted: dict, declared: dict = None) -> dict:
    """The verdicts on analysed cells: each variant against its base, the
    family's false-discovery adjustment, what the report shows.  Apart
    from analyse so that changed rules can be tried on a published
    analysis.json without reading its runs again.  `declared`: the
    comparisons declared unresolved (common/unresolved.txt if None):
    tested as every other, shown as "unresolved"."""
    declared = unresolved.load() if declared is None else declared
    bases = out["bases"]
    for key, c in out["cells"].items():
        scen, var = key.split("/")
        if var == bases[var]:
            across = out["cells"].get(f"{scen}/baseline")
            if var != "baseline" and across:
                c["vs_other_generation"] = _compare(
                    "p99", c["per_boot"]["p99"], across["per_boot"]["p99"],
                    strata(c, across))
            continue
        base = out["cells"].get(f"{scen}/{bases[var]}")
        if not base:
            continue
        vs = _against_base(out, scen, c, base)
        for m, cmp in vs.items():
            if (scen, var, m) in declared:
                cmp["unresolved"] = declared[(scen, var, m)]
        c["vs_baseline"] = vs
        p = predicted.get((scen, var))
        if p:
            c["prediction"] = dict(p)
    out["rule"] = stats.RULE.name
    family = printed_family(out)
    for cmp, q in zip(family, stats.bh_adjust([x["p"] for x in family])):
        cmp["q"] = q
    out["family_size"] = len(family)
    for key, c in out["cells"].items():
        scen = key.split("/")[0]
        for cmp in [*c.get("vs_baseline", {}).values(),
                    *[c[k] for k in ("vs_other_generation",) if k in c]]:
            cmp["shown"] = shown_verdict(cmp, out["withheld"].get(scen))
        if "prediction" in c:
            cmp = c["vs_baseline"].get(c["prediction"]["metric"],
                                       {"shown": "untested"})
            c["prediction"]["outcome"] = predictions.outcome(
                c["prediction"]["expected"], _tested(cmp))
    return out


def printed_family(a: dict) -> list:
    """The comparisons the report prints, each once: its family for the
    false-discovery adjustment.  Per compared cell: the scenario's lead
    metric, the tail quantiles beside a lead other than p99, every cost
    metric and a predicted metric; per base of another generation, its
    p99 against baseline."""
    family = {}
    for key, c in a["cells"].items():
        vs = c.get("vs_baseline", {})
        chosen = [vs[m] for m in printed_metrics(a, key) if m in vs]
        if "vs_other_generation" in c:
            chosen.append(c["vs_other_generation"])
        for cmp in chosen:
            if "p" in cmp:
                family[id(cmp)] = cmp
    return list(family.values())


def fill_derived(a: dict) -> dict:
    """A published analysis with each cell's derived per-boot metrics
    (of_boot) filled in where its report predates them; the same
    dict."""
    for c in a["cells"].values():
        per_boot = c.get("per_boot", {})
        if not per_boot or not all(per_boot.values()):
            continue
        n = len(next(iter(per_boot.values())))
        boots = [stats.with_derived({m: vs[i] for m, vs in per_boot.items()})
                 for i in range(n)]
        for m in BOOT_METRICS:
            if m not in per_boot and all(m in b for b in boots):
                per_boot[m] = [b[m] for b in boots]
    return a


def printed_metrics(a: dict, key: str) -> list:
    """The metrics a report prints of a compared cell: its scenario's
    lead, the tail metrics judged beside it, every cost metric and a
    predicted metric."""
    scen = key.split("/")[0]
    c = a["cells"][key]
    names = {*judged_tail(a, scen), *c["cost"]}
    if "prediction" in c:
        names.add(c["prediction"]["metric"])
    return sorted(names)


def _against_base(a: dict, scen: str, c: dict, base: dict) -> dict:
    """{metric: comparison} of a cell with its base's: on every boot, or
    in a group-sequential run (`looks`, stats.Looks) at the first look
    that settles the scenario's lead and tail metrics, each look on the
    first boots the cells have at its own alpha (the comparison's
    `look`).  The last look a cell reaches takes every boot it has, so
    a failed boot or a scenario's extra boots never leave boots
    unjudged or a cell stuck before its last look."""
    def at(upto: int = None, alpha: float = None) -> dict:
        rule = stats.RULE if alpha is None else \
            dataclasses.replace(stats.RULE, alpha=alpha)
        mine, theirs = _first(c, upto), _first(base, upto)
        both = strata(c, base) if upto is None else None  # one run's boots
        vs = {m: _compare(m, mine["per_boot"][m], theirs["per_boot"][m],
                          both, rule) for m in BOOT_METRICS
              if m in mine["per_boot"] and m in theirs["per_boot"]}
        vs.update({m: _compare(m, v, theirs["cost"][m], both, rule)
                   for m, v in mine["cost"].items() if m in theirs["cost"]})
        return vs
    looks = a.get("looks")
    if not looks:
        return at()
    have = min(len(c["boots"]), len(base["boots"]))
    for k, (upto, alpha) in enumerate(zip(looks["boots"], looks["alpha"])):
        last = k == len(looks["boots"]) - 1 or have <= upto
        vs = at(None if last else upto, alpha)
        settled = all(_settles(vs[m]) for m in judged_tail(a, scen)
                      if m in vs)
        if settled or last:
            for cmp in vs.values():
                cmp["look"] = k + 1
            c["settled"] = settled
            return vs


def _settles(cmp: dict) -> bool:
    """A comparison a look settles: a finding, or shown the same."""
    return cmp["verdict"] in ("lower", "higher") or bool(cmp.get("same"))


def _first(cell: dict, upto: int = None) -> dict:
    """The cell's per-boot and cost values of its first `upto` boots (all
    where None)."""
    if upto is None:
        return cell
    first = set(sorted(cell["boots"])[:upto])
    keep = [b in first for b in cell["boots"]]
    return {k: {m: [x for x, ok in zip(vs, keep) if ok]
                for m, vs in cell[k].items()} for k in ("per_boot", "cost")}


def unsettled(a: dict) -> set:
    """{(variant, scenario)} of the cells a group-sequential run's first
    look left undecided, with their bases: the cells its second look
    extends."""
    out = set()
    for key, c in a["cells"].items():
        if c.get("settled") is False:
            scen, var = key.split("/")
            out |= {(var, scen), (a["bases"][var], scen)}
    return out


def judged_tail(a: dict, scen: str) -> list:
    """A scenario's lead metric, then those judged beside it: the tail
    quantiles where the lead is not p99, and the scenario's own tail
    metrics (`tail`: a tail with two modes)."""
    lead = lead_of(a, scen)
    beside = [m for m in TAIL_METRICS if m != lead] if lead != "p99" \
        else []
    return [lead] + beside + [m for m in a.get("tail", {}).get(scen, ())
                              if m != lead and m not in beside]


BOOT_METRICS = [m.name for m in metrics.LATENCY]


def base_of(run: dict) -> str:
    """The variant a run's variant is compared with (variant.conf `base`;
    runs from before the key existed were all compared with baseline)."""
    return run.get("variant_conf", {}).get("base", "baseline")


def _compare(metric: str, variant: list, base: list,
             strata: tuple = None, rule: "stats.Rule" = None) -> dict:
    m = metrics.get(metric)
    return stats.compare(variant, base, m.better, m.min_effect, m.min_level,
                         strata, rule, binary=m.binary)


def strata(cell: dict, base: dict):
    """The run each boot of two pooled cells came from (`runs`, set by
    lab/analyse/pool.py), or None for one run's cells."""
    if "runs" in cell and "runs" in base:
        return cell["runs"], base["runs"]
    return None


def _looks(runs: list) -> dict:
    """The group-sequential plan every run was made under (stats.Looks
    as {boots, alpha}), or None."""
    made = {tuple(r.get("looks") or ()) for r in runs}
    if len(made) != 1 or not next(iter(made)) or \
            any("pooled_from" in r for r in runs):
        return None
    boots = list(next(iter(made)))
    if boots != list(stats.LOOKS.boots):
        raise LabError(f"runs made with looks at {boots} boots, the lab's "
                       f"plan has them at {list(stats.LOOKS.boots)}")
    return {"boots": boots, "alpha": list(stats.LOOKS.alpha)}


def published_verdict(vs: dict) -> str:
    """A published comparison's verdict as read today: the one its report
    printed, and "small" verdicts (reports before 2026-12-05's floors)
    as n.s.: they did not repeat between two runs of the default
    matrix."""
    word = vs.get("shown", vs.get("verdict", ""))
    return "n.s." if word.startswith("small ") else word


def _tested(cmp: dict) -> str:
    """What a prediction is scored on: the shown verdict, or for a
    comparison declared unresolved its test where that found nothing
    (a prediction is not shown), else "unresolved" (neither confirmed
    nor refuted)."""
    if cmp["shown"] == "unresolved" and cmp["verdict"] == "n.s.":
        return "n.s."
    return cmp["shown"]


def shown_verdict(cmp: dict, withheld_reason) -> str:
    """The verdict the report prints: the test's, unless withheld or
    declared unresolved."""
    if withheld_reason:
        return "withheld"
    if cmp.get("unresolved") and cmp["verdict"] != "not enough boots":
        return "unresolved"
    if stats.RULE.spread and cmp["verdict"] == "n.s." and \
            cmp.get("p", 1) < stats.RULE.alpha and \
            abs(cmp["shift"]) <= cmp["spread"]:
        return "withheld (spread)"  # significant, within the base's spread
    if cmp["verdict"].split()[-1] in ("lower", "higher") and \
            cmp.get("q", 0) >= stats.FDR:
        return "withheld (FDR)"     # significant alone, not in its family
    if cmp["verdict"] == "n.s." and cmp.get("same"):
        return "same"               # shown alike, within the margin
    return cmp["verdict"]


def emulator_blamed(traces: dict, scen: str, variants: list,
                    both_busy: bool = False, null: dict = None) -> str:
    """Why a scenario's verdicts are withheld, or "" if they stand.

    - the scenario keeps every vCPU busy and the null control of its
      guest size (null: {name: per-boot p99s}; no softirq load, so no
      kernel can delay the task) measured emulator latency over
      NULL_LIMIT_US in the same results;
    - or the traces that agree with cyclictest blame the emulator (a
      vCPU standing still in an interrupt) for most of a variant's worst
      wake-ups.
    """
    for name, p99s in (null or {}).items() if both_busy else ():
        if _median(p99s) > NULL_LIMIT_US:
            return (f"emulator: every vCPU busy, and the null control "
                    f"{name} (no softirq load) has p99 "
                    f"{fmt_us(min(p99s))}-{fmt_us(max(p99s))} us on "
                    f"baseline")
    for var in variants:
        worst = traces.get(f"{scen}/{var}", {}).get("worst", [])
        blamed = sum(bool(x.get("emulator")) for x in worst)
        if worst and 2 * blamed > len(worst):
            return (f"emulator: {blamed} of {var}'s {len(worst)} worst "
                    f"traced wake-ups are vCPUs the emulator did not run")
    return ""


# The null control's median p99 above which busy scenarios are withheld:
# idle's p99 is 30-200 us here; null-hog's was 9-26 ms.
NULL_LIMIT_US = 1000


NULL_CONTROL = "null-hog"
def judges_null(r: dict) -> bool:
    """Whether a run's kernel is the one whose null-control runs judge
    its guest shape: the seeds' generation's base, on any architecture
    (baseline, baseline-arm64), from the variant.conf the run records."""
    conf = r.get("variant_conf", {})
    return conf.get("base", "baseline") == r["variant"] and \
        conf.get("source", paths.GENERATION) == paths.GENERATION


def is_null_control(scen: str) -> bool:
    """null-hog, or its twin at another guest size (null-hog-4cpu): a
    busy scenario is judged by the one of its own size."""
    return scen == NULL_CONTROL or scen.startswith(NULL_CONTROL + "-")


def lead_of(a: dict, scen: str) -> str:
    """The latency metric a scenario leads with (p99 in an analysis made
    before scenarios could name one)."""
    return a.get("lead", {}).get(scen, "p99")


_median = stats.upper_median


# shown beside a scenario's lead metric where it is not p99: the other
# tail quantiles, and the share of samples over 1 ms (a maximum is one
# sample; the share counts all the millisecond ones)
TAIL_METRICS = ("p99", "p99.9", "p99.99", "over_1ms")


def softirq_rates(runs: list) -> dict:
    """{vector: [handler runs per guest second of the measurement, one
    per boot]}, from /proc/softirqs before and after it."""
    runs = [r for r in runs if r.get("measured_seconds")]
    return {v: [r["softirqs"][v] / r["measured_seconds"] for r in runs]
            for v in results.VECTORS} if runs else {}
