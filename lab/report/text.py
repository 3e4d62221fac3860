"""report.txt: the analysis (lab/analyse/analysis.py) as plain text of at most
72 columns, for a reply on the list: the summary, the setup, the rules,
and per scenario its rows, verdicts, tail quantiles and costs.
"""
import re
from collections import defaultdict

from ..base import kconfig, medium, metrics, paths, stats
from . import sweeps as report_sweeps, traces as report_traces
from ..analyse import softirqrates, stalls
from ..analyse.analysis import NULL_LIMIT_US, _median, judged_tail, lead_of
from ..base.textfmt import WIDTH, fmt_us, wrap as _wrap


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


def _medium(r0: dict, short: bool = False) -> str:
    acc = r0["qemu"]["accel"]
    if acc["name"] == "tcg" and any("icount" in a for a in acc["args"]):
        said = medium.of(acc)
        if short:
            return f"virtual time under QEMU's icount ({said}), not " \
                f"hardware time (lab/docs/medium.md)"
        m = re.search(r"icount-slice=(\d+)", " ".join(acc["args"]))
        slice_us = f"{int(m.group(1)) / 1000:g} us" if m else ""
        turns = (("every busy vCPU at its full speed, in passes of at "
                  f"most {slice_us}" if slice_us else "every busy vCPU "
                  "at its full speed") if medium.parallel(acc) else
                 (f"vCPUs run in turns of at most {slice_us}, N busy "
                  "ones each at 1/N speed" if slice_us else
                  "vCPUs run in turn"))
        return (f"virtual time under icount ({said}: {turns}), not "
                f"hardware time (lab/docs/medium.md)")
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
    hosts = sorted({r["qemu"]["host_cpu"] for r in runs})
    out += _wrap(f"Host CPU{'s' if len(hosts) > 1 else ''}: "
                 f"{'; '.join(hosts)}.", "  ")
    if a.get("alike"):
        out += _wrap(f"Pooled across runs whose {', '.join(a['alike']['keys'])} "
                     f"differ, declared to measure alike: "
                     f"{a['alike']['because'].rstrip('.')}.", "  ")
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
    size = (f"{_n(len(a['variants']), 'kernel')} x "
            f"{_n(len(a['scenarios']), 'scenario')}, {span} boots per cell")
    sources = sorted({b["from"] for b in a.get("pooled", ())})
    lines = [(f"{size}, the boots of {len(sources)} runs of one plan "
              f"pooled ({', '.join(sources)}), one value per boot.",
              f"{size}, {len(sources)} runs pooled.", 1)
             if sources else f"{size}, one value per boot.",
             ("Medium: " + _medium(runs[0]) + ".",
              "Medium: " + _medium(runs[0], short=True) + ".", 1)]
    holds, few, none, fdr, toss, same = defaultdict(list), [], [], [], [], []
    for key, c in a["cells"].items():
        scen, var = key.split("/")
        vs = c.get("vs_baseline", {}).get(lead_of(a, scen))
        if vs and vs["shown"] in ("lower", "higher"):
            holds[f"{var} {vs['shown']}"].append(f"{scen} {effect(vs)}")
        elif vs and vs["shown"] == "not enough boots":
            few.append((var, scen))
        elif vs and vs["shown"] == "n.s.":
            none.append((var, scen))
        elif vs and vs["shown"] == "same":
            same.append((var, scen))
        elif vs and vs["shown"] == "withheld (FDR)":
            fdr.append((var, scen))
        elif vs and vs["shown"] == "unresolved":
            toss.append((var, scen))
    # lines with a shorter form (long, short, rank), made short lowest
    # rank first while the summary does not fit: what the rows below or
    # the setup say again goes short before what holds
    n_holds = sum(len(v) for v in holds.values())
    label = _lead_label(a)
    lines.append((f"{label} holds (rank test, 5+ boots): " + (
        "; ".join(f"{k} in {', '.join(v)}" for k, v in holds.items())
        if holds else "nothing") + ".",
        f"{label} holds (rank test, 5+ boots) in {n_holds} comparisons, "
        f"marked lower or higher below.", 3))
    others = (f"the other {len(none)} comparison"
              f"{'s' if len(none) > 1 else ''}")
    if none:
        # the list is in the per-scenario rows; a count keeps the summary
        # whole within its lines
        lines.append(f"Undecided in {others}: no difference found, none "
                     f"shown alike (n.s. below).")

    def listed(pairs, long, short):
        """A line naming the comparisons, or in short their count."""
        return (f"{long}: " + _by_scenario(
            pairs, a["variants"], set(a["bases"].values())) + ".",
            f"{short}: {len(pairs)} comparisons, marked below.", 2)
    if same:
        lines.append(listed(same, f"The same within "
                            f"{stats.EQUIVALENCE_RATIO:.0%} of the base "
                            f"(equivalence)", "Same"))
    if fdr:
        lines.append(listed(fdr, "Significant alone, not among the "
                            "report's comparisons (withheld (FDR))",
                            "Withheld (FDR)"))
    if toss:
        lines.append(listed(toss, "Unresolved at this many boots "
                            "(declared, common/unresolved.txt)",
                            "Unresolved"))
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
    rep = a.get("replication")
    if rep:
        names = ", ".join(rep["reports"])
        if rep["differ"]:
            distinct = len({(d["cell"], d["metric"]) for d in rep["differ"]})
            lines.append((
                f"Not replicated in an earlier run of this plan ({names}): "
                + "; ".join(f"{d['cell']} {d['metric']} {d['here']} here, "
                            f"{d['there']} in {d['report']}"
                            for d in rep["differ"]) + ".",
                f"Not as in an earlier run of this plan: "
                f"{_n(distinct, 'finding')} (replicate-*.md).", 0))
        else:
            lines.append((f"Every finding as in {names} (the same plan).",
                          f"Every finding as in the "
                          f"{_n(len(rep['reports']), 'earlier run')} of "
                          f"this plan (replicate-*.md).", 0))
    ranks = sorted(line[2] for line in lines if isinstance(line, tuple))

    def wrapped(short: int) -> list:
        """The summary with its `short` lowest-ranked lines short."""
        out = []
        for line in lines:
            if isinstance(line, tuple):
                line = line[1] if line[2] in ranks[:short] else line[0]
            out += _wrap(line, "  ")
        return out
    for short in range(len(ranks) + 1):
        out = wrapped(short)
        if len(out) <= SUMMARY_LINES:
            return out
    raise AssertionError("summary too long:\n" + "\n".join(out))


SUMMARY_LINES = 10


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
    cells = {var: a["cells"].get(f"{scen}/{var}") for var in a["variants"]}
    words = {var: _verdict_word(c.get("vs_baseline", {}).get(lead))
             for var, c in cells.items() if c and c["boots"]}
    # a long name and the longest verdict take room from the values
    # column, the same in every row and in the header; values that do
    # not fit go on lines of their own
    label = lead + " per boot (us)"
    col = max(len(label) + 1, min(28, WIDTH - (2 + n + 6 + 7 + 2 + max(
        [len("vs base"), *map(len, words.values())]))))
    head = f"  {'variant':<{n}}{label:<{col}}{'>1ms':>6}" \
        f"{'missed':>7}  {lead} vs base"
    out = [head if len(head) <= WIDTH else
           head.replace(f"{lead} vs", "vs")]
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


def _median_pct(values: list) -> str:
    m = _median(values)
    return f"{100 * m:.1f}%" if m == m else "-"


def effect(vs: dict) -> str:
    """The size of a difference: the ratio of medians, or where the
    base's median is 0 the difference itself."""
    if vs.get("binary"):
        return f"{100 * vs['shift']:+.0f} points"
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
    if vs["shown"] == "unresolved":
        return f"unresolved (test: {vs['verdict']}, {stats.fmt_p(vs['p'])})"
    if vs["shown"].startswith(("withheld", "n.s.")):
        return vs["shown"]
    return f"{vs['shown']} {effect(vs)}"


def _bases_text(a: dict) -> str:
    named = a.get("named_bases", {})

    def listed(pairs) -> str:
        per = defaultdict(list)
        for var, base in pairs:
            if var != base:
                per[base].append(var)
        return "; ".join(f"{b} for {', '.join(sorted(vs))}"
                         for b, vs in sorted(per.items()))
    own = listed((v, b) for v, b in a["bases"].items() if v not in named)
    if named:
        return (own + "; " if own else "") + \
            f"and, named by the report's --base: {listed(named.items())}"
    return own or "none compared"


def _beside_lead(a: dict, scen: str, var: str) -> list:
    """One variant's metrics judged beside the lead: median over boots
    (for a count of boots in a tail's high mode, the count) and verdict
    (a quantile that no boot had the samples for is left out)."""
    c = a["cells"].get(f"{scen}/{var}")
    if not c or not c["boots"]:
        return []
    parts = []
    for m in judged_tail(a, scen)[1:]:
        values = [x for x in c["per_boot"].get(m, []) if x == x]
        med = _median(values)
        if med != med:
            continue
        word = _verdict_word(c.get("vs_baseline", {}).get(m), detail=True)
        unit = metrics.get(m).unit
        value = f"{sum(values):.0f}/{len(values)} boots" if unit == "boots" \
            else f"{100 * med:.3f}%" if unit == "share" else fmt_us(med)
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
                         f"base's spread {fmt_us(p['spread'])} us.",
                         "    ")
        out += _beside_lead(a, scen, var)
        pred = a["cells"].get(f"{scen}/{var}", {}).get("prediction")
        if pred:
            cmp = vs.get(pred["metric"], {})
            out += _wrap(f"{var}: predicted {pred['metric']} "
                         f"{pred['expected']} ({pred['why']}): "
                         f"{pred['outcome']} ({cmp.get('shown', 'no data')})"
                         f".", "    ")
    return out


def _rule_bars(rule: "stats.Rule") -> str:
    """What the rule asks beyond the test, in words."""
    bars = []
    if rule.ratio:
        bars.append(f"medians {rule.ratio:g}x apart or more (where the "
                    f"base's median is 0, the difference instead)")
    where = f"whose whole interval (at least {stats.LEVEL:.0%}) lies" \
        if rule.floor_by == "interval" else "that lies"
    beyond = "the base's boot-to-boot spread (interquartile range) and " \
        if rule.spread else ""
    bars.append(f"a Hodges-Lehmann shift {where} beyond {beyond}the "
                f"metric's floor ({metrics.FLOORS['us']:g} us for latencies; "
                f"lab/base/metrics.py)")
    return "; and ".join(bars)


def rules_text(a: dict) -> str:
    rule = stats.RULES.get(a.get("rule", ""), stats.RULE)
    return (
        f"Verdicts compare per-boot values with the base's (the "
        f"unpatched kernel of the variant's own source generation: "
        f"{_bases_text(a)}), under the rule '{rule.name}': a two-sided "
        f"exact permutation test of ranks (Mann-Whitney; stratified by "
        f"run where runs are pooled), p < {rule.alpha}, and q < "
        f"{stats.FDR} after Benjamini-Hochberg over the "
        f"{a.get('family_size', 0)} comparisons printed here (each "
        f"compared cell's lead metric, the metrics judged beside it, "
        f"its cost metrics and a predicted metric); "
        f"{_rule_bars(rule)}; a significant shift that misses a bar is "
        f"n.s. " + _looks_text(a.get("looks")) + _shares_text(a) +
        f"At least "
        f"{stats.MIN_BOOTS} boots per cell, else 'too few (n)'. "
        f"'same': no finding, and the shift's "
        f"{stats.EQUIVALENCE_LEVEL:.0%} interval lies within "
        f"{stats.EQUIVALENCE_RATIO:.0%} of the base's median (or the "
        f"metric's floor where larger); 'n.s.' alone is no finding and not 'the same': "
        f"the interval reaches past that margin. "
        f"'withheld': the scenario keeps every vCPU busy and the null "
        f"control of its guest size (null-hog, null-hog-4cpu...) shows "
        f"emulator latency over {fmt_us(NULL_LIMIT_US)} us, or traces "
        f"that agree with cyclictest blame the emulator for its worst "
        f"cases. 'withheld (FDR)': p < {rule.alpha}, but q is not under "
        f"{stats.FDR}. 'unresolved': declared in common/unresolved.txt; "
        f"its test is in data/analysis.json. 'too few (base n)': the "
        f"base has n boots. >1ms and missed (periods cyclictest skipped, "
        f"of those due) are medians over boots. Latencies in "
        f"microseconds.")


def _shares_text(a: dict) -> str:
    """How the counts of boots in a tail's high mode are judged, where a
    scenario names one."""
    shares = sorted({m for ms in a.get("tail", {}).values() for m in ms
                     if metrics.get(m).binary})
    if not shares:
        return ""
    return (f"A count of boots in a tail's high mode ({', '.join(shares)}) "
            f"is compared by the exact test of two shares, its shift the "
            f"difference of the shares. ")


def _looks_text(looks: dict) -> str:
    """The group-sequential plan a run was made under, in words."""
    if not looks:
        return ""
    (b1, b2), (a1, a2) = looks["boots"], looks["alpha"]
    return (f"Boots where they decide: every cell got {b1} boots, and a "
            f"comparison whose lead and tail metrics that look left "
            f"undecided (no finding, not 'same') got {b2} for both cells; "
            f"each look judges every boot measured by then, the first at "
            f"p < {a1}, the second at p < {a2}, so that the two looks together find "
            f"no more false differences than one at {a1 + a2:g}. ")


def rates_text(cal: dict) -> str:
    """The rule's measured error rates (lab/analyse/calibrate.py), or
    why there are none."""
    if not cal:
        return ("This rule's error rates have not been measured "
                "(python3 -m lab calibrate).")
    one, pooled = cal["relabelled"]
    aa = (f"; the A/A control {cal['null_controls'][0]} of "
          f"{cal['null_controls'][1]} comparisons" if
          cal.get("null_controls") else "")
    found = ", ".join(f"{r80} / {r95} at {n} boots"
                      for n, (r80, r95) in cal["detectable"].items())
    return (f"Measured ({cal['report']}): a finding in {one} of null "
            f"comparisons of 5 boots against 5 (boots relabelled within "
            f"their runs) and in {pooled} of pooled ones{aa}; the change "
            f"it finds in 80% / 95% of runs, median over lead metrics: "
            f"{found}.")


def text_report(runs: list, a: dict, descriptions: dict) -> str:
    out = _wrap("softirq-rt lab: " + " vs ".join(a["variants"])) + \
        ["", "Summary"]
    out += _summary(runs, a)
    out += ["", "Setup"] + _setup_lines(runs, a, descriptions)
    out += ["", "Rules"] + _wrap(rules_text(a), "  ")
    out += _wrap(rates_text(a.get("calibration")), "  ")
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
            if f.get("stall"):
                out += _wrap(stalls.describe(f["stall"]), "    ")
            if f.get("starved"):
                out += _wrap(softirqrates.describe(f["starved"]), "    ")
            if f.get("console"):
                # the file's name alone can pass the line's width
                out += _wrap("its whole console: data/, the boot's "
                             ".console.log.gz", "    ")
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
        where = p.get("placement")
        if where:       # CPUs of different sizes
            shares = ", ".join(f"{name} {share * 100:.0f}%"
                               for name, share in where["share"].items())
            out += _wrap(f"woke on {shares}; on a CPU too small for its "
                         f"clamp ({where['rt_clamp']}): "
                         f"{where['too_small'] * 100:.0f}%", " " * (n + 2))
    return out


def _cost_rows(a: dict, scen: str) -> list:
    """The cost metrics per variant: medians, with verdicts unless the
    scenario is withheld."""
    cells = [(v, a["cells"][f"{scen}/{v}"]) for v in a["variants"]
             if f"{scen}/{v}" in a["cells"]]
    names = sorted({m for _, c in cells for m in c["cost"]
                    if m != "ksoftirqd_cpu_percent"})
    # every cost metric in the family is printed, ksoftirqd's CPU too
    # where the scenario's load has no counters of its own
    if not any(c["cost"] for _, c in cells):
        return []
    out = ["  cost, median over boots " + ("(shown only: withheld):"
                                          if scen in a["withheld"] else
                                          "(verdict against its base):")]
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
