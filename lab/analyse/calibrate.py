"""The verdict rule's two error rates, measured on the lab's own data.

`python3 -m lab calibrate REPORT [REPORT ...]` (`make calibrate
REPORTS="..."`) reads the reports' data/analysis.json and scores every
rule declared in lab/base/stats.py (RULES) on:

- false findings, where the answer is known to be "no difference":
  - relabelled: in every cell the reports measured (every variant's,
    bases and proposals alike), each run's boots are split at random
    into two labels and the labels compared, over the comparisons a
    report prints (lead metric, tail metrics, cost metrics).  At two
    sizes: two runs of one plan, each split 2/3 and 3/2 (5 boots
    against 5, the test of one report), and every run, each split in
    half (the test of a pool, stratified by run);
  - the A/A control: a variant that boots its base's kernel as its base
    does (role = control, no handler_scale; variants/baseline-aa), in
    the reports that hold one: each finding against its base is false;
- sensitivity, where the answer is known to be "a difference of this
  size":
  - injected: each scenario's lead metric in each base cell, boots
    drawn with replacement from every boot the reports measured, one
    side multiplied by a known ratio; the share of simulated runs in
    which the rule finds it, at 5, 10 and 35 boots a side, and the
    smallest change it finds in 80% and in 95% of runs;
  - real: a control whose test-module handlers are shorter by a known
    factor on the same kernel (handler_scale; variants/baseline-4ms), in
    the reports that hold one: its verdicts, and how often 5 of its
    boots against 5 of its base's find the change.

The false-discovery step of a report's family is left out of the
simulated figures (it can only take findings away; a report's own
printed verdicts include it).  Relabelled boots are exchangeable by
construction, so the rank test alone is at its level there: that
figure shows what the bars and ties make of it.  Boots of one run that
share something (the order they ran in, the host's state) can only show
in the A/A control.
"""
import json
from collections import defaultdict

import numpy as np

from ..base import metrics, paths, stats
from . import analysis

# Effects injected: the variant's values times r (for a count of boots
# over a threshold, each such boot kept with probability r).
RATIOS = (0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)
SIZES = (5, 10, 35)
# Sizes at and over this use the rank test's normal approximation in
# the simulations (the exact count at 35 boots a side takes ~10 ms a
# test); at these sizes the two differ in the fourth decimal.
EXACT_UP_TO = 15


def boots_by_run(analyses: list, names: list) -> dict:
    """{cell: {metric: {run: [values]}}} over the reports (`names`: each
    analysis's report; a pooled analysis's boots keep their own run)."""
    out = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for an, name in zip(analyses, names):
        for key, c in an["cells"].items():
            runs = c.get("runs") or [name] * len(c["boots"])
            values = {**c["per_boot"], **c["cost"]}
            for m in analysis.printed_metrics(an, key):
                for run, x in zip(runs, values.get(m, ())):
                    if x == x:
                        out[key][m][run].append(x)
    return out


def _judge_all(m: dict, metric: str) -> dict:
    """{rule name: the verdict on a measured comparison}."""
    md = metrics.get(metric)
    return {name: stats.judged(m, md.better, md.min_effect, md.min_level,
                               rule)["verdict"]
            for name, rule in stats.RULES.items()}


def _found(verdict: str) -> bool:
    return verdict in ("lower", "higher")


def _split(values: list, rng, first_gets_more: bool) -> tuple:
    """One run's boots in two labels at random, the odd one to the
    first label or the second."""
    v = rng.permutation(values)
    half = (len(v) + first_gets_more) // 2
    return list(v[:half]), list(v[half:])


def relabelled(by_run: dict, runs_at_a_time: int, trials: int,
               rng) -> dict:
    """False findings of each rule over relabelled boots: {rule:
    (findings, comparisons)}.  `runs_at_a_time`: 2 (a report's 5
    against 5, unstratified) or 0 (every run, stratified)."""
    found = defaultdict(int)
    tested = 0
    for key in sorted(by_run):
        for metric, runs in sorted(by_run[key].items()):
            names = sorted(r for r in runs if len(runs[r]) >= 2)
            if runs_at_a_time and len(names) < runs_at_a_time:
                continue
            for t in range(trials):
                chosen = rng.choice(names, runs_at_a_time, replace=False) \
                    if runs_at_a_time else names
                a, b, sa, sb = [], [], [], []
                for i, run in enumerate(chosen):
                    x, y = _split(runs[run], rng, (i + t) % 2 == 0)
                    a += x
                    b += y
                    sa += [run] * len(x)
                    sb += [run] * len(y)
                strata = None if runs_at_a_time else (sa, sb)
                m = stats.measure(a, b, strata, exact=len(a) < EXACT_UP_TO,
                                  binary=_binary(metric))
                if "p" not in m:
                    continue
                tested += 1
                for rule, verdict in _judge_all(m, metric).items():
                    found[rule] += _found(verdict)
    return {rule: [found[rule], tested] for rule in stats.RULES}


def _binary(metric: str) -> bool:
    return metrics.get(metric).binary


def _scaled(values: np.ndarray, r: float, binary: bool, rng):
    if binary:
        return values * (rng.random(len(values)) < r)
    return values * r


def _share_found(draw, metric: str, way: str, trials: int) -> dict:
    """{rule: share of `trials` simulated comparisons, each of the two
    samples `draw()` returns, that find a change in direction `way`}."""
    hits = defaultdict(int)
    for _ in range(trials):
        mine, theirs = draw()
        m = stats.measure(mine, theirs, exact=len(mine) < EXACT_UP_TO,
                          binary=_binary(metric))
        for rule, verdict in _judge_all(m, metric).items():
            hits[rule] += verdict == way
    return {rule: hits[rule] / trials for rule in stats.RULES}


def injected(by_run: dict, bases: dict, leads: dict, trials: int, rng,
             sizes: tuple = SIZES, ratios: tuple = RATIOS) -> list:
    """Per base cell and lead metric: {cell, metric, boots, rate: {rule:
    {n: {r: share of runs that find it}}}}."""
    rows = []
    for key in sorted(by_run):
        scen, var = key.split("/")
        if bases.get(var) != var:
            continue
        for metric in leads.get(scen, ("p99",)):
            pooled = np.array([x for vs in by_run[key].get(metric, {}).values()
                               for x in vs])
            binary = _binary(metric)
            # a share of boots in a tail's high mode, under a half, has a
            # median of 0 and still a change to find
            if len(pooled) < 10 or not (pooled.mean() if binary
                                        else np.median(pooled)):
                continue
            rate = {rule: {n: {} for n in sizes} for rule in stats.RULES}
            for n in sizes:
                for r in ratios:
                    found = _share_found(
                        lambda: (_scaled(rng.choice(pooled, n), r, binary,
                                         rng), rng.choice(pooled, n)),
                        metric, "lower", trials)
                    for rule in stats.RULES:
                        rate[rule][n][r] = found[rule]
            rows.append({"cell": key, "metric": metric,
                         "boots": len(pooled), "rate": rate})
    return rows


def detectable(rates: dict, power: float) -> float:
    """The change closest to none that is found in at least `power` of
    runs, and every larger one too (a ratio; None: not even x0.1)."""
    for r in sorted(rates, reverse=True):       # 0.95 first
        if all(rates[s] >= power for s in rates if s <= r):
            return r
    return None


def null_controls(analyses: list, names: list) -> list:
    """Every printed comparison of an A/A control (role = control, no
    handler_scale) against its base: {report, cell, metric, verdict as
    printed, findings under each rule}."""
    rows = []
    for an, name in zip(analyses, names):
        for key in an["cells"]:
            if an.get("controls", {}).get(key.split("/")[1]) == "":
                rows += _against_base(an, name, key)
    return rows


def known_effects(analyses: list, names: list, by_run: dict, trials: int,
                  rng) -> list:
    """A handler_scale control's comparisons against its base: its
    verdicts, the share of 5-boot draws from its real boots that find
    the change (`drawn`), and the share the injection gives for that
    change, its measured ratio injected into every boot the reports
    hold of the base's cell (`injected`), both counting the measured
    direction only."""
    rows = []
    for an, name in zip(analyses, names):
        for key in an["cells"]:
            scale = an.get("controls", {}).get(key.split("/")[1])
            if not scale:
                continue
            scen, var = key.split("/")
            base = f"{scen}/{an['bases'][var]}"
            for row in _against_base(an, name, key, lead_only=True):
                row["handler_scale"] = float(scale)
                way = "lower" if row["shift"] < 0 else "higher"
                row["drawn"] = _redrawn(an, key, row["metric"], way,
                                        trials, rng)
                boots = [x for vs in by_run.get(base, {}).get(
                    row["metric"], {}).values() for x in vs]
                # a ratio over a base median of 0 is none to inject
                row["injected"] = _injected_at(
                    np.array(boots), row["metric"], row["ratio"], way,
                    trials, rng) if row["ratio"] else None
                rows.append(row)
    return rows


def _injected_at(pooled, metric: str, r: float, way: str, trials: int,
                 rng) -> dict:
    """{rule: share of simulated runs of 5 boots a side that find the
    change r, injected into the pooled boots, in direction `way`}."""
    return _share_found(
        lambda: (_scaled(rng.choice(pooled, 5), r, _binary(metric), rng),
                 rng.choice(pooled, 5)), metric, way, trials)


def _against_base(an: dict, name: str, key: str,
                  lead_only: bool = False) -> list:
    scen, var = key.split("/")
    base = an["cells"].get(f"{scen}/{an['bases'][var]}")
    if not base:
        return []
    c = an["cells"][key]
    values = {**c["per_boot"], **c["cost"]}
    theirs = {**base["per_boot"], **base["cost"]}
    names = [analysis.lead_of(an, scen)] if lead_only else \
        analysis.printed_metrics(an, key)
    rows = []
    for metric in names:
        if metric not in values or metric not in theirs:
            continue
        m = stats.measure(values[metric], theirs[metric],
                          analysis.strata(c, base), binary=_binary(metric))
        if "p" not in m:
            continue
        printed = c.get("vs_baseline", {}).get(metric, {})
        rows.append({"report": name, "cell": key, "metric": metric,
                     "ratio": m["ratio"], "shift": m["shift"], "p": m["p"],
                     "printed": printed.get("shown", ""),
                     "verdicts": _judge_all(m, metric)})
    return rows


def _redrawn(an: dict, key: str, metric: str, way: str, trials: int,
             rng) -> dict:
    """{rule: share of draws of 5 boots a side, with replacement, from
    the two cells' real boots, that find the change in direction
    `way`}."""
    scen, var = key.split("/")
    mine = np.array([x for x in an["cells"][key]["per_boot"][metric]
                     if x == x])
    theirs = np.array([x for x in an["cells"][
        f"{scen}/{an['bases'][var]}"]["per_boot"][metric] if x == x])
    return _share_found(lambda: (rng.choice(mine, 5), rng.choice(theirs, 5)),
                        metric, way, trials)


def run(analyses: list, names: list, trials: int = 100, seed: int = 1,
        sizes: tuple = SIZES) -> dict:
    """Every figure, as data (written to calibration.json)."""
    rng = np.random.default_rng(seed)
    by_run = boots_by_run(analyses, names)
    bases, leads = {}, defaultdict(list)
    for an in analyses:
        bases.update(an["bases"])
        for scen in an["scenarios"]:
            for m in analysis.judged_tail(an, scen):
                if m not in leads[scen]:
                    leads[scen].append(m)
    rules = {name: rule.meaning for name, rule in stats.RULES.items()}
    return {
        "reports": names, "trials": trials, "seed": seed,
        "rules": rules, "rule": stats.RULE.name,
        "relabelled": {
            "one report (5 against 5)": relabelled(by_run, 2, trials, rng),
            "pooled (every run, stratified)": relabelled(by_run, 0, trials,
                                                         rng)},
        "null_controls": null_controls(analyses, names),
        "injected": injected(by_run, bases, leads, trials, rng, sizes),
        "known_effects": known_effects(analyses, names, by_run, trials,
                                       rng),
    }


def _ratio(r) -> str:
    return f"x{r:g}" if r is not None else "-"


def _rate(found: int, tested: int) -> str:
    return f"{100 * found / tested:.2f}% ({found} of {tested})" \
        if tested else "-"


def summary(result: dict, rule: str, n: int, power: float = 0.8) -> str:
    """The median over lead metrics of the change `rule` finds in
    `power` of runs of n boots a side (a metric it never finds counts
    as the worst)."""
    found = sorted((detectable(row["rate"][rule][n], power)
                    for row in result["injected"]),
                   key=lambda r: -1 if r is None else r)
    return _ratio(found[(len(found) - 1) // 2]) if found else "-"


def text(result: dict, command: str) -> str:
    """calibration.md: every figure of `run`, as tables."""
    # in the lab's order of rules, which calibration.json's sorted keys
    # lose
    order = list(stats.RULES)
    rules = {k: result["rules"][k] for k in sorted(
        result["rules"], key=lambda k: order.index(k) if k in order
        else len(order))}
    sizes = sorted(
        {n for row in result["injected"]
         for n in next(iter(row["rate"].values()))}, key=int)
    lines = ["# Calibration: the verdict rule's error rates", "",
             f"From {len(result['reports'])} reports: " +
             ", ".join(f"`{r}`" for r in result["reports"]) +
             f".  {result['trials']} simulated runs per figure (seed "
             f"{result['seed']}).  Made with `{command}` "
             "(lab/analyse/calibrate.py says how).", "",
             f"The rule the lab judges by: **{result['rule']}**.", "",
             "| rule | what a finding needs beyond the two-sided rank test "
             "at p < 0.01 |", "|---|---|"]
    lines += [f"| {name} | {meaning} |" for name, meaning in rules.items()]
    lines += ["", "## False findings", "",
              "Relabelled: each run's boots of a cell split at random "
              "into two labels; every finding between the labels is "
              "false.  A/A: the null control's printed comparisons "
              "against its base, judged under each rule.", "",
              "| rule | " + " | ".join(result["relabelled"]) +
              " | A/A control |", "|---|" + "---|" *
              (len(result["relabelled"]) + 1)]
    aa = result["null_controls"]
    for name in rules:
        cols = [_rate(*result["relabelled"][k][name])
                for k in result["relabelled"]]
        hits = sum(r["verdicts"][name] in ("lower", "higher") for r in aa)
        cols.append(f"{hits} of {len(aa)}" if aa else "none measured")
        lines.append(f"| {name} | " + " | ".join(cols) + " |")
    if aa:
        false = [r for r in aa if any(v in ("lower", "higher")
                                      for v in r["verdicts"].values())]
        lines += ["", "The A/A comparisons that any rule calls a finding, "
                  "and what their report printed:", ""]
        lines += [f"- `{r['report']}` {r['cell']} {r['metric']}: "
                  f"p = {r['p']:.3g}, printed {r['printed'] or '-'}; " +
                  ", ".join(f"{k} {v}" for k, v in r["verdicts"].items())
                  for r in false] or ["None."]
    lines += ["", "## Sensitivity, injected", "",
              "Each base cell's lead metric: boots drawn with replacement "
              "from all the reports' boots of the cell, one side times a "
              "known ratio.  Each entry: the change the rule finds (in "
              "the right direction) in 80% / 95% of simulated runs of n "
              "boots a side; '-': not even x0.1.", "",
              "| rule | " + " | ".join(f"median, {n} boots" for n in sizes)
              + " |", "|---|" + "---|" * len(sizes)]
    for name in rules:
        lines.append(f"| {name} | " + " | ".join(
            f"{summary(result, name, n)} / {summary(result, name, n, 0.95)}"
            for n in sizes) + " |")
    for name in rules:
        lines += ["", f"### {name}", "",
                  "| cell | metric | boots measured | " +
                  " | ".join(f"{n} boots" for n in sizes) + " |",
                  "|---|---|---|" + "---|" * len(sizes)]
        for row in result["injected"]:
            rate = row["rate"][name]
            lines.append(
                f"| {row['cell']} | {row['metric']} | {row['boots']} | " +
                " | ".join(f"{_ratio(detectable(rate[n], 0.8))} / "
                           f"{_ratio(detectable(rate[n], 0.95))}"
                           for n in sizes) + " |")
    known = result["known_effects"]
    lines += ["", "## Sensitivity, a real change of known size", ""]
    if not known:
        lines.append("No report given holds a known-effect control "
                     "(handler_scale, variants/baseline-4ms).")
    else:
        lines += ["The test module's handlers at a known fraction of their "
                  "length on the same kernel: its lead metric against the "
                  "base, the verdict under each rule, and per rule the "
                  "share of draws of 5 of its boots against 5 of the "
                  "base's (with replacement) that find the change, beside "
                  "the share the injection gives for the measured ratio "
                  "(every boot of the base's cell in these reports).", "",
                  "| report | cell | handlers | ratio of medians | p | "
                  + " | ".join(rules) + " |",
                  "|---|---|---|---|---|" + "---|" * len(rules)]
        def share(r: dict, k: str) -> str:
            return f"{100 * r['injected'][k]:.0f}%" if r["injected"] \
                else "- (base median 0)"
        lines += [f"| `{r['report']}` | {r['cell']} {r['metric']} | "
                  f"x{r['handler_scale']:g} | "
                  f"{_ratio(round(r['ratio'], 3) if r['ratio'] else None)}"
                  f" | {r['p']:.3g} | " + " | ".join(
                      f"{r['verdicts'][k]}; 5 boots: drawn "
                      f"{100 * r['drawn'][k]:.0f}%, injected {share(r, k)}"
                      for k in rules) + " |"
                  for r in known]
    return "\n".join(lines) + "\n"


# The calibration the lab's rule was chosen by and is published with:
# every report's Rules section quotes its figures for the rule it uses.
PUBLISHED = "2026-12-07-calibration"


def rule_summary(result: dict, rule: str, report: str = PUBLISHED) -> dict:
    """One rule's figures, as a report's Rules section quotes them."""
    one, pooled = (result["relabelled"][k][rule]
                   for k in result["relabelled"])
    aa = result["null_controls"]
    sizes = sorted({int(n) for row in result["injected"]
                    for n in row["rate"][rule]})
    return {"report": f"reports/{report}/", "rule": rule,
            "relabelled": [_rate(*one).split(" ")[0],
                           _rate(*pooled).split(" ")[0]],
            "null_controls": [sum(r["verdicts"][rule] in ("lower", "higher")
                                  for r in aa), len(aa)] if aa else None,
            "detectable": {n: [summary(result, rule, n),
                               summary(result, rule, n, 0.95)]
                           for n in sizes}}


def published(rule: str) -> dict:
    """The published calibration's figures for `rule`, or None where it
    is missing or did not score that rule."""
    f = paths.REPO / "reports" / PUBLISHED / "data" / "calibration.json"
    if not f.is_file():
        return None
    result = json.loads(f.read_text())
    if rule not in result["rules"]:
        return None
    return rule_summary(_keys_as_numbers(result), rule)


def _keys_as_numbers(result: dict) -> dict:
    """calibration.json read back: JSON made the boot counts and ratios
    of `rate` strings."""
    for row in result["injected"]:
        row["rate"] = {rule: {int(n): {float(r): v for r, v in by.items()}
                              for n, by in sizes.items()}
                       for rule, sizes in row["rate"].items()}
    return result
