"""Turn run folders into a report: report.txt, report.md, plots, data/.

Reads only what the runs wrote (via lab/results.py), so it can be run
again, anywhere the results folder was copied, without booting anything.
report.txt is plain text of at most 72 columns, for a reply on the list.
"""
import re
import time
from collections import defaultdict
from pathlib import Path

from . import (figures, kconfig, metrics, paths, predictions, report_sweeps,
               report_traces, results, stats, store)
from .cores import map_on_cores
from .log import LabError, warn
from .textfmt import WIDTH, fmt_us, wrap as _wrap


def _read_run(run_dir: Path):
    """(the run's summary, None) or (None, why it cannot be read)."""
    try:
        return results.summarize(run_dir), None
    except (OSError, ValueError, KeyError, LabError) as e:
        return None, str(e)
    except (TypeError, AttributeError) as e:
        # a field of the wrong type, edited by hand or from another tool
        return None, f"run.json has a field of the wrong type ({e})"


def load(root: Path, variants=None, scenarios=None) -> list:
    """The summary of every run in `variants` x `scenarios` (all where
    None), read one run per host core (a trace phase takes seconds).
    Runs sit in <variant>/<scenario>/boot-<k> (lab/matrix.py)."""
    runs = []
    dirs = [p.parent for p in sorted(root.glob("*/*/boot-*/run.json"))
            if (not variants or p.parts[-4] in variants)
            and (not scenarios or p.parts[-3] in scenarios)]
    read = map_on_cores(_read_run, dirs, chunksize=4)
    for run_dir, (s, error) in zip(dirs, read):
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
    """Probe figures over the cell's valid samples, or None."""
    probes = [r["probe"] for r in rs if r.get("probe")
              and probe_valid(r["probe"]["summary"])]
    every = [x for p in probes for x in p["samples"]]
    valid = [x for x in every if x.get("waker_us", 0) < WAKER_ON_TIME_US]
    if not valid:
        return None
    lat = sorted(x["latency_us"] for x in valid)
    return {"samples": len(every), "valid": len(valid),
            "median_us": lat[len(lat) // 2],
            "p99_us": lat[min(len(lat) - 1, int(0.99 * len(lat)))],
            "moved": sum(x["cpu"] != x["prev_cpu"] for x in valid)
            / len(valid)}


def analyse(runs: list, traces: dict = None, predicted: dict = None,
            busy: set = frozenset(), lead: dict = None) -> dict:
    """Per cell: each boot's values; per variant: verdicts on them.

    A boot whose cyclictest threads could not move (the affinity widening
    failed) is left out of the cell and counted.  A scenario whose traced
    worst cases the trace attribution blames on the emulator has its
    verdicts withheld.
    """
    traces = traces or {}
    predicted = predictions.load() if predicted is None else predicted
    ok = [r for r in runs if r["status"] == "ok"]
    by_cell = defaultdict(list)
    for r in ok:
        by_cell[(r["scenario"], r["variant"])].append(r)
    bases = {r["variant"]: base_of(r) for r in runs}
    # each base, then the variants compared with it; 6.1's first
    variants = sorted(bases, key=lambda v: (bases[v] != "baseline",
                                            bases[v], v != bases[v], v))
    scenarios = sorted({r["scenario"] for r in runs},
                       key=lambda s: (s != "idle", s))
    size = {r["scenario"]: r.get("cpus", 2) for r in runs}

    def null(scen: str) -> dict:
        """The null control of scen's guest size: {its name: p99s}."""
        found = defaultdict(list)
        for r in ok:
            if is_null_control(r["scenario"]) and \
                    size[r["scenario"]] == size[scen] and \
                    r["variant"] == "baseline" and r["affinity"]["as_asked"]:
                found[r["scenario"]].append(r["boot_values"]["p99"])
        return dict(found)
    out = {"variants": variants, "bases": bases, "scenarios": scenarios,
           # the latency metric each scenario's rows and summary lead with
           "lead": {s: (lead or {}).get(s, "p99") for s in scenarios},
           "cells": {},
           "probe_args": {r["scenario"]: r.get("plan_env", {}).get(
               "PROBE_ARGS", "") for r in ok},
           "module_args": {r["scenario"]: r.get("plan_env", {}).get(
               "MODULE_ARGS", "") for r in ok},
           "withheld": {s: w for s in scenarios
                        if (w := emulator_blamed(traces, s, variants,
                                                 s in busy, null(s)))},
           "failed": [{k: r[k] for k in ("variant", "scenario", "boot",
                                         "reason")}
                      for r in runs if r["status"] != "ok"]}
    for (scen, var), rs in sorted(by_cell.items()):
        free = sorted((r for r in rs if r["affinity"]["as_asked"]),
                      key=lambda r: r["boot"])
        per_boot = {m: [r["boot_values"][m] for r in free]
                    for m in BOOT_METRICS}
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
        probe = probe_summary(free)
        if probe:
            c["probe"] = probe
        out["cells"][f"{scen}/{var}"] = c
    for key, c in out["cells"].items():
        scen, var = key.split("/")
        if var == bases[var]:
            across = out["cells"].get(f"{scen}/baseline")
            if var != "baseline" and across:
                c["vs_other_generation"] = _compare(
                    "p99", c["per_boot"]["p99"], across["per_boot"]["p99"])
            continue
        base = out["cells"].get(f"{scen}/{bases[var]}")
        if not base:
            continue
        vs = {m: _compare(m, c["per_boot"][m], base["per_boot"][m])
              for m in BOOT_METRICS}
        vs.update({m: _compare(m, v, base["cost"][m])
                   for m, v in c["cost"].items() if m in base["cost"]})
        c["vs_baseline"] = vs
        p = predicted.get((scen, var))
        if p:
            c["prediction"] = dict(p)
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
                c["prediction"]["expected"], cmp["shown"])
    return out


def printed_family(a: dict) -> list:
    """The comparisons the report prints, each once: its family for the
    false-discovery adjustment.  Per compared cell: the scenario's lead
    metric, the tail quantiles beside a lead other than p99, every cost
    metric and a predicted metric; per base of another generation, its
    p99 against baseline."""
    family = {}
    for key, c in a["cells"].items():
        scen = key.split("/")[0]
        lead = lead_of(a, scen)
        vs = c.get("vs_baseline", {})
        names = {lead, *c["cost"]}
        if lead != "p99":
            names |= set(TAIL_METRICS)
        if "prediction" in c:
            names.add(c["prediction"]["metric"])
        chosen = [vs[m] for m in sorted(names) if m in vs]
        if "vs_other_generation" in c:
            chosen.append(c["vs_other_generation"])
        for cmp in chosen:
            if "p" in cmp:
                family[id(cmp)] = cmp
    return list(family.values())


BOOT_METRICS = [m.name for m in metrics.LATENCY]


def base_of(run: dict) -> str:
    """The variant a run's variant is compared with (variant.conf `base`;
    runs from before the key existed were all compared with baseline)."""
    return run.get("variant_conf", {}).get("base", "baseline")


def _compare(metric: str, variant: list, base: list) -> dict:
    m = metrics.get(metric)
    return stats.compare(variant, base, m.better, m.min_effect)


def shown_verdict(cmp: dict, withheld_reason) -> str:
    """The verdict the report prints: the test's, unless withheld."""
    if withheld_reason:
        return "withheld"
    if cmp["verdict"] == "n.s." and cmp.get("p", 1) < stats.ALPHA \
            and abs(cmp["shift"]) <= cmp["spread"]:
        return "withheld (spread)"  # significant, within the boots' spread
    if cmp["verdict"].split()[-1] in ("lower", "higher") and \
            cmp.get("q", 0) >= stats.FDR:
        return "withheld (FDR)"     # significant alone, not in its family
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


def is_null_control(scen: str) -> bool:
    """null-hog, or its twin at another guest size (null-hog-4cpu): a
    busy scenario is judged by the one of its own size."""
    return scen == NULL_CONTROL or scen.startswith(NULL_CONTROL + "-")


MODELS = {"PREEMPT_RT": "PREEMPT_RT", "PREEMPT": "full preemption "
          "(CONFIG_PREEMPT)", "PREEMPT_DYNAMIC": "preemption chosen at "
          "boot (PREEMPT_DYNAMIC)", "": "voluntary or no preemption"}


def kernel_setup(runs: list) -> str:
    """HZ, from the fragment every variant shares (the build verifies
    that the kernels have it), and each variant's preemption model, as
    its booted kernel names it in the banner: the most common one, and
    the variants with another."""
    req = {r.option: r.value for r in
           kconfig.parse_fragment(paths.COMMON_CONFIG)}
    hz = next((o[len("CONFIG_HZ_"):] for o, v in req.items()
               if o.startswith("CONFIG_HZ_") and v == "y"), "?")
    # a variant's model from any of its runs whose console has the banner
    # (a failed or LAVA run may have none)
    model = {}
    for r in runs:
        if r.get("preemption") is not None or r["variant"] not in model:
            model[r["variant"]] = r.get("preemption")
    per = defaultdict(list)
    for var in sorted(model):
        per[MODELS.get(model[var], "not in the boot log")].append(var)
    ranked = sorted(per.items(), key=lambda kv: -len(kv[1]))
    out = f"HZ={hz}, {ranked[0][0]}" if ranked else f"HZ={hz}"
    for model, names in ranked[1:]:
        out += f", {model} for {', '.join(names)}"
    return out


def _medium(r0: dict) -> str:
    acc = r0["qemu"]["accel"]
    if acc["name"] == "tcg" and any("icount" in a for a in acc["args"]):
        m = re.search(r"icount-slice=(\d+)", " ".join(acc["args"]))
        turns = (f"in turns of at most {int(m.group(1)) // 1000} us" if m
                 else "in turn")
        return ("virtual time under icount (QEMU TCG: each instruction a "
                f"fixed time, vCPUs run {turns}), not hardware time")
    return f"QEMU, accelerator {acc['name']}"


def _setup_lines(runs: list, a: dict, descriptions: dict) -> list:
    r0 = runs[0]
    q = r0["qemu"]
    per = defaultdict(list)     # (version, source) -> variants
    for var in a["variants"]:
        r = next(r for r in runs if r["variant"] == var)
        per[(r["kernel"]["kernel_version"],
             r["variant_conf"].get("source", "6.1"))].append(var)
    out = _wrap("Kernel: " + "; ".join(
        f"Linux {version} (Debian linux-source-{source}) for "
        f"{', '.join(vs)}" for (version, source), vs in per.items())
        + f"; {kernel_setup(runs)}.", "  ")
    emulator = q["accel"].get("emulator")
    which = (f"the lab's QEMU ({emulator['source']} with "
             f"{', '.join(emulator['patches'])}; build {emulator['build']})"
             if emulator else q["qemu_version"])
    sizes = sorted({(r.get("cpus", 2), r.get("memory_mb", 1024))
                    for r in runs})
    out += _wrap(f"Guest: {which}, "
                 + " or ".join(f"{c} vCPUs and {m} MB" for c, m in sizes)
                 + (" (each scenario's below)" if len(sizes) > 1 else "")
                 + ", "
                 f"{' '.join(q['accel']['args'])}"
                 + (f", guest {q['accel']['append']}"
                    if q['accel'].get('append') else "")
                 + (" (one CPU at boot, as every icount setting; init "
                    "brings the other CPUs online before any test)"
                    if "maxcpus=1" in q['accel'].get('append', "") else "")
                 + ".", "  ")
    out += _wrap(f"Host CPU: {q['host_cpu']}.", "  ")
    out += _wrap("cyclictest -p 99 -m, threads free to move (affinity "
                 "widened after start; samples before that dropped); a "
                 "random phase per boot between the periodic loads and "
                 "cyclictest (seed in run.json).", "  ")
    for scen in a["scenarios"]:
        r = next(x for x in runs if x["scenario"] == scen)
        env = r.get("plan_env") or {}
        pin = env.get("PIN", "")
        size = f"{r.get('cpus', 2)} vCPUs, " if len(sizes) > 1 else ""
        out += _wrap(f"{scen}: {size}{env.get('DURATION', '?')} s, "
                     f"cyclictest "
                     f"{env.get('CYCLICTEST', '?')}"
                     + (f" pinned to CPU{pin}" if str(pin) else "") + "; "
                     + ("synthetic load (the softirq_load module)"
                        if env.get("MODULE_ARGS") else "natural load")
                     + ".", "    ")
    return out


def _by_scenario(pairs: list, variants: list,
                 bases=("baseline",)) -> str:
    """'long-block (zijlstra), idle' from (variant, scenario) pairs: a
    scenario without a list holds for every compared variant."""
    per = defaultdict(list)
    for var, scen in pairs:
        per[scen].append(var)
    others = [v for v in variants if v not in bases]
    return ", ".join(scen if sorted(vs) == sorted(others) else
                     f"{scen} ({', '.join(vs)})" for scen, vs in per.items())


def _summary(runs: list, a: dict) -> list:
    """At most SUMMARY_LINES lines: what was compared, the medium, what
    holds, what could not be decided and why."""
    boots = sorted({len(c["boots"]) for c in a["cells"].values()}) or [0]
    span = str(boots[0]) if boots[0] == boots[-1] else \
        f"{boots[0]}-{boots[-1]}"
    lines = [f"{_n(len(a['variants']), 'kernel')} x "
             f"{_n(len(a['scenarios']), 'scenario')}, {span} boots per "
             f"cell, one value per boot.",
             "Medium: " + _medium(runs[0]) + "."]
    holds, few, none, fdr = defaultdict(list), [], [], []
    for key, c in a["cells"].items():
        scen, var = key.split("/")
        vs = c.get("vs_baseline", {}).get(lead_of(a, scen))
        if vs and vs["shown"] in ("lower", "higher"):
            holds[f"{var} {vs['shown']}"].append(f"{scen} {effect(vs)}")
        elif vs and vs["shown"] == "not enough boots":
            few.append((var, scen))
        elif vs and vs["shown"] == "n.s.":
            none.append((var, scen))
        elif vs and vs["shown"] == "withheld (FDR)":
            fdr.append((var, scen))
    # lines with a shorter form (counts; the rows below list them), used
    # from the last such line back while the summary does not fit
    n_holds = sum(len(v) for v in holds.values())
    label = _lead_label(a)
    lines.append((f"{label} holds (rank test, 5+ boots): " + (
        "; ".join(f"{k} in {', '.join(v)}" for k, v in holds.items())
        if holds else "nothing") + ".",
        f"{label} holds (rank test, 5+ boots) in {n_holds} comparisons, "
        f"marked lower or higher below."))
    others = (f"the other {len(none)} comparison"
              f"{'s' if len(none) > 1 else ''}")
    if none:
        # the list is in the per-scenario rows; a count keeps the summary
        # whole within its lines
        lines.append(f"No difference detected in {others} (n.s. below).")
    if fdr:
        lines.append(("Significant alone, not among the report's "
                      "comparisons (withheld (FDR)): " + _by_scenario(
                          fdr, a["variants"], set(a["bases"].values()))
                      + ".", f"Withheld (FDR): {len(fdr)} comparisons, "
                      f"marked below."))
    if few:
        lines.append("Too few boots: " + _by_scenario(
            few, a["variants"], set(a["bases"].values())) + ".")
    if a["withheld"]:
        lines.append("Withheld (emulator): " + ", ".join(a["withheld"])
                     + ".")
    tally = defaultdict(int)
    for c in a["cells"].values():
        if "prediction" in c:
            tally[c["prediction"]["outcome"]] += 1
    if tally:
        lines.append("Predictions: " + ", ".join(
            f"{n} {k}" for k, n in sorted(tally.items())) + ".")
    forms = sum(isinstance(line, tuple) for line in lines)

    def wrapped(short: int) -> list:
        """The summary with the last `short` two-form lines short."""
        out, seen = [], 0
        for line in lines:
            if isinstance(line, tuple):
                seen += 1
                line = line[1] if seen > forms - short else line[0]
            out += _wrap(line, "  ")
        return out
    for short in range(forms + 1):
        out = wrapped(short)
        if len(out) <= SUMMARY_LINES:
            return out
    raise AssertionError("summary too long:\n" + "\n".join(out))


SUMMARY_LINES = 10


def lead_of(a: dict, scen: str) -> str:
    """The latency metric a scenario leads with (p99 in an analysis made
    before scenarios could name one)."""
    return a.get("lead", {}).get(scen, "p99")


def _lead_label(a: dict) -> str:
    """'p99', or 'p99 (max in cover-letter, qais)' where scenarios lead
    with another metric."""
    others = defaultdict(list)
    for scen in a["scenarios"]:
        m = lead_of(a, scen)
        if m != "p99":
            others[m].append(scen)
    if not others:
        return "p99"
    if len(others) == 1 and len(next(iter(others.values()))) == \
            len(a["scenarios"]):
        return next(iter(others))
    return "p99 (" + "; ".join(f"{m} in {', '.join(ss)}"
                               for m, ss in others.items()) + ")"


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _name_width(a: dict) -> int:
    """The variant column: 10, or wider for a longer name."""
    return max([10] + [len(v) + 1 for v in a["variants"]])


def _cell_rows(a: dict, scen: str) -> list:
    n = _name_width(a)
    lead = lead_of(a, scen)
    head = f"  {'variant':<{n}}{lead + ' per boot (us)':<28}{'>1ms':>6}" \
        f"{'missed':>7}  {lead} vs base"
    out = [head if len(head) <= WIDTH else
           head.replace(f"{lead} vs", "vs")]
    cells = {var: a["cells"].get(f"{scen}/{var}") for var in a["variants"]}
    words = {var: _verdict_word(c.get("vs_baseline", {}).get(lead))
             for var, c in cells.items() if c and c["boots"]}
    # a long name and the longest verdict take room from the values
    # column, the same in every row; values that do not fit go on lines
    # of their own
    col = max(0, min(28, WIDTH - (2 + n + 6 + 7 + 2 +
                                  max(map(len, words.values()),
                                      default=0))))
    for var, c in cells.items():
        if var not in words:
            out.append(f"  {var:<{n}}no finished run with free threads")
            continue
        pb = c["per_boot"]
        vals = " ".join(fmt_us(v) for v in pb[lead])
        over = _median_pct(pb["over_1ms"])
        missed = _median_pct(pb["missed"])
        word = words[var]
        if len(vals) < col:
            out.append(f"  {var:<{n}}{vals:<{col}}{over:>6}{missed:>7}  "
                       f"{word}".rstrip())
        else:
            out.append(f"  {var:<{n}}{'':<{col}}{over:>6}{missed:>7}  "
                       f"{word}".rstrip())
            out += _wrap(vals, "      ")
        if c["pinned_boots"]:
            out.append(f"      boots {c['pinned_boots']} left out: "
                       f"threads not placed as asked")
    return out


_median = stats.upper_median


def _median_pct(values: list) -> str:
    m = _median(values)
    return f"{100 * m:.1f}%" if m == m else "-"


def effect(vs: dict) -> str:
    """The size of a difference: the ratio of medians, or where the
    base's median is 0 the difference itself."""
    if vs.get("ratio") is None:
        return f"{vs['median'][0] - vs['median'][1]:+.3g} (base 0)"
    return f"x{vs['ratio']:.2f}"


def _verdict_word(vs, detail: bool = False) -> str:
    """The verdict as printed; with `detail`, an n.s. that the test found
    but the effect rules did not count says so ("n.s. (lower x0.83,
    under 1.5x)"): detected, not a finding."""
    if not vs:
        return ""
    if detail and vs["shown"] == "n.s." and vs.get("under"):
        return (f"n.s. ({vs['direction']} {effect(vs)}, under "
                f"{vs['under']})")
    if vs["shown"] == "not enough boots":
        n, base = vs["boots"]
        return f"too few ({n})" if n < stats.MIN_BOOTS else \
            f"too few (base {base})"
    if vs["shown"].startswith(("withheld", "n.s.")):
        return vs["shown"]
    return f"{vs['shown']} {effect(vs)}"


def _bases_text(a: dict) -> str:
    per = defaultdict(list)
    for var, base in a["bases"].items():
        if var != base:
            per[base].append(var)
    return "; ".join(f"{b} for {', '.join(sorted(vs))}"
                     for b, vs in sorted(per.items())) or "none compared"


# shown beside a scenario's lead metric where it is not p99: the other
# tail quantiles, and the share of samples over 1 ms (a maximum is one
# sample; the share counts all the millisecond ones)
TAIL_METRICS = ("p99", "p99.9", "p99.99", "over_1ms")


def _beside_lead(a: dict, scen: str, var: str) -> list:
    """One variant's other tail quantiles: median over boots and verdict
    (a quantile that no boot had the samples for is left out)."""
    c = a["cells"].get(f"{scen}/{var}")
    if not c or not c["boots"]:
        return []
    parts = []
    for m in TAIL_METRICS:
        if m == lead_of(a, scen):
            continue
        med = _median(c["per_boot"].get(m, []))
        if med != med:
            continue
        word = _verdict_word(c.get("vs_baseline", {}).get(m), detail=True)
        value = f"{100 * med:.3f}%" if m == "over_1ms" else fmt_us(med)
        parts.append(f"{m} {value}" + (f" {word}" if word else ""))
    line = f"{var}: " + "; ".join(parts)
    return _wrap(line if line.endswith(".") else line + ".", "    ") \
        if parts else []


def _p_and_q(cmp: dict) -> str:
    """'p = 0.008, q = 0.03': the test's two-sided p and, for a printed
    comparison, its false-discovery-adjusted q."""
    p = cmp.get("p", min(1.0, 2 * min(cmp["p_lower"], cmp["p_higher"])))
    q = cmp.get("q")
    if q is None:
        return stats.fmt_p(p)
    # three decimals: q = 0.0496 must not read as 0.05
    return stats.fmt_p(p) + (", q < 0.001" if q < 0.001 else
                             f", q = {q:.3f}")


def _detail(a: dict, scen: str) -> list:
    out = []
    lead = lead_of(a, scen)
    for var in a["variants"]:
        gen = a["cells"].get(f"{scen}/{var}", {}).get("vs_other_generation")
        if gen:
            word = _verdict_word(dict(gen, shown=gen.get("shown",
                                                         gen["verdict"])))
            out += _wrap(f"{var} against baseline, across source "
                         f"generations (not like for like): p99 "
                         f"{word.rstrip('.')}.", "    ")
        vs = a["cells"].get(f"{scen}/{var}", {}).get("vs_baseline", {})
        p = vs.get(lead)
        if p and p["shown"] == "withheld" and p["verdict"] not in (
                "n.s.", "not enough boots"):
            out += _wrap(f"{var}: the test alone would say {lead} "
                         f"{p['verdict']} {effect(p)} "
                         f"({_p_and_q(p)}); withheld as above.", "    ")
        if p and p["shown"] == "withheld (FDR)":
            out += _wrap(f"{var}: {lead} {p['verdict']} {effect(p)} "
                         f"alone ({_p_and_q(p)}), not among its "
                         f"{a.get('family_size', 0)} comparisons: more "
                         f"boots would decide it.", "    ")
        if p and p["shown"].split()[-1] in ("lower", "higher"):
            lo, hi = p["shift_interval"]
            out += _wrap(f"{var}: {lead} shift {fmt_us(p['shift'])} us "
                         f"[{fmt_us(lo)}, {fmt_us(hi)}], {_p_and_q(p)}, "
                         f"boots' spread {fmt_us(p['spread'])} us.",
                         "    ")
        if lead != "p99":
            out += _beside_lead(a, scen, var)
        pred = a["cells"].get(f"{scen}/{var}", {}).get("prediction")
        if pred:
            cmp = vs.get(pred["metric"], {})
            out += _wrap(f"{var}: predicted {pred['metric']} "
                         f"{pred['expected']} ({pred['why']}): "
                         f"{pred['outcome']} ({cmp.get('shown', 'no data')})"
                         f".", "    ")
    return out


def text_report(runs: list, a: dict, descriptions: dict) -> str:
    out = _wrap("softirq-rt lab: " + " vs ".join(a["variants"])) + \
        ["", "Summary"]
    out += _summary(runs, a)
    out += ["", "Setup"] + _setup_lines(runs, a, descriptions)
    out += ["", "Rules"] + _wrap(
        f"Verdicts compare per-boot values with the base's (the "
        f"unpatched kernel of the variant's own source generation: "
        f"{_bases_text(a)}): a two-sided "
        f"exact permutation test of ranks (Mann-Whitney), p < "
        f"{stats.ALPHA}, and q < {stats.FDR} after Benjamini-Hochberg over "
        f"the {a.get('family_size', 0)} comparisons printed here; medians "
        f"{stats.RATIO}x apart or more (where the base's median is 0, "
        f"the difference instead of a ratio); and a "
        f"Hodges-Lehmann shift larger than the larger boots' spread "
        f"(interquartile range) of the two cells and at least the "
        f"metric's floor (5 us for latencies; lab/metrics.py FLOORS); "
        f"a significant shift that misses the ratio or the floor is n.s. "
        f"At least "
        f"{stats.MIN_BOOTS} boots per cell, else 'too few (n)'. "
        f"'withheld': the scenario keeps every vCPU busy and the null "
        f"control of its guest size (null-hog, null-hog-4cpu...) shows "
        f"emulator latency over "
        f"{fmt_us(NULL_LIMIT_US)} us, or traces that agree with "
        f"cyclictest blame the emulator for its worst cases. 'withheld "
        f"(spread)': significant, but the shift is within the boots' "
        f"spread. 'withheld (FDR)': p < {stats.ALPHA}, but q is not "
        f"under {stats.FDR}. 'too few (base n)': the base has n boots. "
        f">1ms and missed (periods cyclictest skipped, of those due) are "
        f"medians over boots. Latencies in microseconds.", "  ")
    for scen in a["scenarios"]:
        out += [""] + _wrap(f"{scen}: {descriptions.get(scen, '')}", "  ")
        out += _cell_rows(a, scen)
        if scen in a["withheld"]:
            out += _wrap(f"withheld: {a['withheld'][scen]}.", "    ")
        out += _detail(a, scen)
        out += report_traces.cause_lines(a.get("traces", {}),
                                         a["variants"], scen)
        out += _probe_rows(a, scen) + _cost_rows(a, scen)
    out += report_sweeps.text(a.get("sweeps", {}), a["variants"])
    if a.get("traces"):
        out += [""] + _wrap("Causes of the worst cases and the tracing "
                            "overhead, in full: report.md.")
    if a["failed"]:
        per = {v: sum(f["variant"] == v for f in a["failed"])
               for v in a["variants"]}
        out += [""] + _wrap("Failed runs (kept, not counted): " + ", ".join(
            f"{v} {n}" for v, n in per.items()), "  ")
        for f in a["failed"]:
            # the first line names the failure; a quote follows a colon
            why = f["reason"].splitlines() or [""]
            first = " ".join(why[:2]) if why[0].endswith(":") else why[0]
            out += _wrap(f"- {f['variant']} {f['scenario']} boot "
                         f"{f['boot']}: {first}", "  ")
    too_long = [line for line in out if len(line) > WIDTH]
    assert not too_long, f"report line over {WIDTH} columns: {too_long[0]}"
    return "\n".join(out) + "\n"


def _probe_rows(a: dict, scen: str) -> list:
    rows = [(v, a["cells"][f"{scen}/{v}"]["probe"]) for v in a["variants"]
            if "probe" in a["cells"].get(f"{scen}/{v}", {})]
    if not rows:
        return []
    pinned = " -P" in f" {a['probe_args'].get(scen, '')} "
    out = _wrap("probe, RT task woken inside the handler" + (
        ", pinned to CPU0" if pinned else "") + " (wake-ups issued in "
        "time):", "  ")
    n = _name_width(a)
    for var, p in rows:
        out.append(f"  {var:<{n}}median {fmt_us(p['median_us'])}, p99 "
                   f"{fmt_us(p['p99_us'])}, moved {p['moved'] * 100:.0f}% "
                   f"({p['valid']}/{p['samples']})")
    return out


def _cost_rows(a: dict, scen: str) -> list:
    """The cost metrics per variant: medians, with verdicts unless the
    scenario is withheld."""
    cells = [(v, a["cells"][f"{scen}/{v}"]) for v in a["variants"]
             if f"{scen}/{v}" in a["cells"]]
    names = sorted({m for _, c in cells for m in c["cost"]
                    if m != "ksoftirqd_cpu_percent"})
    if not names and scen != "cost":
        return []
    out = ["  cost, median over boots " + ("(shown only: withheld):"
                                          if scen in a["withheld"] else
                                          "(verdict against baseline):")]
    for var, c in cells:
        parts = []
        for m in names + ["ksoftirqd_cpu_percent"]:
            v = _median(c["cost"].get(m, []))
            if v != v:
                continue
            vs = c.get("vs_baseline", {}).get(m)
            word = f" {_verdict_word(vs, detail=True)}" if vs and \
                scen not in a["withheld"] else ""
            parts.append(f"{m} {v:.3g}{word}")
        out += _wrap(f"{var}: " + ", ".join(parts), "  ")
    return out


def histograms(runs: list, a: dict, out: Path, colors: dict) -> list:
    """The latency histogram as the OSADL QA farm draws it: samples per
    1 us bin on a log scale over latency, one line per kernel (its boots
    pooled: a picture, not a test), one panel per scenario."""
    plt = figures.pyplot()
    scens = [s for s in a["scenarios"] if any(
        r["status"] == "ok" and r["scenario"] == s and r["histogram"]
        for r in runs)]
    if not scens:
        return []
    cols = min(3, len(scens))
    rows = -(-len(scens) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 2.6 * rows),
                             squeeze=False)
    for ax, scen in zip(axes.flat, scens):
        for var in a["variants"]:
            pooled = defaultdict(int)
            for r in runs:
                if r["status"] == "ok" and r["scenario"] == scen and \
                        r["variant"] == var:
                    for k, n in r["histogram"].items():
                        pooled[int(k)] += n
            if pooled:
                keys = sorted(pooled)
                ax.step(keys, [pooled[k] for k in keys], where="mid",
                        color=colors[var], lw=0.8, label=var)
        ax.set_yscale("log")
        ax.set_title(scen, fontsize=9)
        ax.set_xlabel("latency (us)", fontsize=8)
        ax.set_ylabel("samples", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(scens):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    figures.save(fig, out / "histograms.png")
    return ["histograms.png"]


def plots(runs: list, a: dict, out: Path) -> list:
    plt = figures.pyplot()

    colors = {v: f"C{i}" for i, v in enumerate(a["variants"])}
    made = []
    for scen in a["scenarios"]:
        ok = [r for r in runs if r["status"] == "ok"
              and r["scenario"] == scen and r["histogram"]]
        if not ok:
            continue            # every run failed: nothing to draw
        fig, ax = plt.subplots(figsize=(7, 4))
        labelled = set()
        for r in sorted(ok, key=lambda r: (r["variant"], r["boot"])):
            h = r["histogram"]
            keys = sorted(h)
            total = sum(h.values())
            above, left = [], total
            for k in keys:
                left -= h[k]
                above.append(left / total)
            var = r["variant"]
            ax.step([max(k, 1) for k in keys], [max(x, 0.5 / total)
                                                for x in above],
                    where="post", color=colors[var], alpha=0.7, lw=1,
                    label=None if var in labelled else var)
            labelled.add(var)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("latency (us)")
        ax.set_ylabel("share of samples above")
        ax.set_title(f"{scen}: one line per boot", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
        fig.tight_layout()
        name = f"survival-{scen}.png"
        figures.save(fig, out / name)
        made.append(name)

    made += histograms(runs, a, out, colors)
    if not a["cells"]:
        return made
    fig, axes = plt.subplots(2, 1, figsize=(9, 7))
    width = 0.8 / max(1, len(a["variants"]))
    for ax, metric in zip(axes, ("p99", "max")):
        drawn = 0
        for i, var in enumerate(a["variants"]):
            xs, ys = [], []
            for j, scen in enumerate(a["scenarios"]):
                c = a["cells"].get(f"{scen}/{var}")
                for v in (c["per_boot"][metric] if c else []):
                    if v == v:                  # NaN: no samples kept
                        xs.append(j + i * width)
                        ys.append(max(v, 1))
            ax.plot(xs, ys, "o", ms=4, alpha=0.7, color=colors[var],
                    label=var)
            drawn += len(ys)
        ax.set_xticks([j + 0.4 - width / 2
                       for j in range(len(a["scenarios"]))])
        ax.set_xticklabels(a["scenarios"], rotation=30, ha="right",
                           fontsize=8)
        if drawn:
            ax.set_yscale("log")        # (no boot left: nothing to scale)
        ax.set_ylabel(f"{metric} (us)")
        ax.set_title(f"{metric}: one point per boot", fontsize=10)
        ax.grid(True, axis="y", which="both", alpha=0.3)
    axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    fig.tight_layout()
    figures.save(fig, out / "tails.png")
    made.append("tails.png")
    return made


def softirq_rates(runs: list) -> dict:
    """{vector: [handler runs per guest second of the measurement, one
    per boot]}, from /proc/softirqs before and after it."""
    runs = [r for r in runs if r.get("measured_seconds")]
    return {v: [r["softirqs"][v] / r["measured_seconds"] for r in runs]
            for v in results.VECTORS} if runs else {}


# vectors that run less often than this in every cell of a scenario are
# left out of its table of handler runs
RATE_MIN_PER_S = 1.0


def softirq_rate_table(a: dict) -> list:
    """report.md's tables of each vector's handler runs per second, per
    scenario: the median boot, and the boots' range."""
    out = []
    for scen in a["scenarios"]:
        rows = [(v, a["cells"][f"{scen}/{v}"]["softirqs_per_s"])
                for v in a["variants"]
                if a["cells"].get(f"{scen}/{v}", {}).get("softirqs_per_s")]
        vecs = [v for v in results.VECTORS
                if any(max(r[v]) >= RATE_MIN_PER_S for _, r in rows)]
        if not rows or not vecs:
            continue
        out += [f"{scen}:", "", "| variant | boots | " +
                " | ".join(vecs) + " |", "|---|---|" + "---|" * len(vecs)]
        for var, r in rows:
            out.append(f"| {var} | {len(r[vecs[0]])} | " + " | ".join(
                f"{_median(r[v]):.0f} ({min(r[v]):.0f}-{max(r[v]):.0f})"
                for v in vecs) + " |")
        out.append("")
    return out


def markdown(text: str, images: list, command: str,
             trace_text: list = (), accounting: list = (),
             rates: list = (), lengths: list = ()) -> str:
    timelines = [i for i in images if i.startswith("timeline-")]
    md = ["# softirq-rt lab report", "",
          f"Made with `{command}`; the raw results are in `data/`.", "",
          "```", text.rstrip(), "```", ""]
    if trace_text:
        md += ["## Causes of the worst cases", "", "```",
               *trace_text, "```", ""]
    if accounting:
        md += ["## Where softirq work ran (traced boots)", "",
               "Share of one CPU each vector took over the trace phase, "
               "run inline (on interrupt exit or at local_bh_enable, on "
               "top of whatever task was current) or in ksoftirqd, and "
               "how often work was handed to ksoftirqd: its wake-ups per "
               "second; among them the early stops, a wake-up straight "
               "after a handler's exit on the same CPU (a time or restart "
               "limit, need_resched, or a variant's own break or "
               "deferral); and per vector, how often it was still pending "
               "at such a stop.  From the trace's softirq_raise/entry/exit "
               "and sched_waking events, mean over the traced boots.  The "
               "last column is the share of cyclictest's traced samples "
               "that ran on CPU0, where most scenarios raise their "
               "softirqs.", "",
               *accounting]
    if rates:
        md += ["## Softirq handler runs per vector (every boot)", "",
               "Runs of each vector's handler per guest second of the "
               "measurement, from /proc/softirqs before and after it: the "
               "median boot, and the range over the cell's boots.  "
               "ksoftirqd's CPU time over the same window is the cost "
               "metric ksoftirqd_cpu_percent.", "", *rates]
    if lengths:
        md += ["## How long softirq handlers ran (traced boots)", "",
               "Each run of a vector's handler in the trace phase, from "
               "softirq_entry to softirq_exit on its task (hard "
               "interrupts inside it, and on PREEMPT_RT preemption inside "
               "it, included); vectors whose longest run is under "
               f"{report_traces.HANDLER_MIN_US} us left out.  Where the "
               "test module is loaded its vector's runs include its "
               "fixed spin; elsewhere they are the kernel's own, from "
               "the emulated devices.", "", *lengths]
    curves = [i for i in images if i.startswith("overload-")]
    if curves:
        md += ["## Overload curves", "", *[f"![{i}]({i})" for i in curves],
               ""]
    md += ["## Tail latency per boot", "", "![p99 and max](tails.png)", ""]
    md += ["## Share of samples above a latency, per boot", ""]
    md += [f"![{i}]({i})" for i in images if i.startswith("survival-")]
    if "histograms.png" in images:
        md += ["", "## Latency histograms (OSADL's form: 1 us bins, boots "
               "pooled)", "", "![histograms](histograms.png)"]
    if timelines:
        md += ["", "## Worst cases, from traces", "",
               "Each variant's worst captured sample per scenario: one row "
               "per guest CPU, tasks below, softirqs and hard irqs above, "
               "the latency window shaded, time in ms from the expected "
               "wake-up. `data/trace-<scenario>-<variant>.json` holds that "
               "window for the Perfetto UI (ui.perfetto.dev); the whole "
               "trace (`trace.dat`, for KernelShark) stays in the run "
               "folder that `data/<variant>-<scenario>-boot1.json` "
               "names.", ""]
        md += [f"![{i}]({i})" for i in timelines]
    return "\n".join(md) + "\n"


def portable(data, root: Path):
    """`data` with no path of this host: run folders relative to the
    results folder, the cache as $LAB_CACHE."""
    prefixes = ((f"{root.resolve()}/", ""), (f"{root}/", ""),
                (str(paths.cache_dir()), "$LAB_CACHE"))
    if isinstance(data, dict):
        return {k: portable(v, root) for k, v in data.items()}
    if isinstance(data, list):
        return [portable(v, root) for v in data]
    if isinstance(data, str):
        for prefix, short in prefixes:
            data = data.replace(prefix, short)
    return data


def write(root: Path, out: Path, descriptions: dict, command: str,
          variants=None, scenarios=None, busy=(), lead=None) -> Path:
    """`lead`: {scenario: the latency metric its rows lead with}, p99
    where not named."""
    runs = load(root, variants, scenarios)
    traces = report_traces.analyse(runs)
    a = analyse(runs, traces, busy=set(busy), lead=lead)
    a["traces"] = traces
    a["sweeps"] = report_sweeps.analyse(runs)
    a["command"] = command
    out.mkdir(parents=True, exist_ok=True)
    (out / "data").mkdir(exist_ok=True)
    # one summary per run, gzip'd: 360 runs of plain JSON are 6 MB, a
    # published report stays under 5 MB
    for r in runs:
        name = f"{r['variant']}-{r['scenario']}-boot{r['boot']}.json.gz"
        store.write_json_gz(out / "data" / name, portable(r, root))
    store.write_json(out / "data" / "analysis.json", portable(a, root))
    text = text_report(runs, a, descriptions)
    store.write_text(out / "report.txt", text)
    images = plots(runs, a, out) + report_traces.files(
        a["traces"], a["variants"], a["scenarios"], out) + \
        report_sweeps.plots(a["sweeps"], a["variants"], out)
    store.write_text(out / "report.md", markdown(
        text, images, command, report_traces.text(
            traces, a["variants"], a["scenarios"]),
        report_traces.accounting_table(traces, a["variants"],
                                       a["scenarios"]),
        softirq_rate_table(a),
        report_traces.handler_table(traces, a["variants"], a["scenarios"],
                                    a["module_args"])))
    return out


def default_folder(name: str) -> Path:
    from . import paths
    return paths.REPO / "reports" / f"{time.strftime('%Y-%m-%d')}-{name}"

