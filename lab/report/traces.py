"""The report's trace part: the cause of each cell's worst cases, the
tracing overhead, a timeline per scenario and files for trace viewers."""
import statistics
from collections import Counter
from itertools import repeat
from pathlib import Path

from ..base import figures, stats
from ..analyse import timerlat, trace, traceview
from ..base.cores import map_on_cores
from ..base.textfmt import WIDTH, fmt_us, wrap as _wrap

WORST = 3                  # wake-ups explained per cell


def analyse(runs: list) -> dict:
    """{"scenario/variant": {"worst": [...], "overhead": {...}}} for
    cells whose runs have a trace phase."""
    cells = {}
    for r in runs:
        if r["status"] != "ok" or "traced_histogram" not in r:
            continue
        c = cells.setdefault(f"{r['scenario']}/{r['variant']}",
                             {"worst": [], "errors": [], "untraced": [],
                              "traced": [], "wakeups": 0, "over": 0,
                              "causes": {}, "mismatched": [], "lost": [],
                              "timerlat": [], "agreed": 0,
                              "softirqs": [], "outside": [],
                              "boot_p99": {}})
        c["untraced"].append(r["histogram"])
        if "timerlat" in r:
            c["timerlat"].append(dict(r["timerlat"], boot=r["boot"]))
        c["traced"].append(r["traced_histogram"])
        # the same boot's measured and traced p99: an explanation from a
        # traced run that differs much explains another run
        c["boot_p99"][r["boot"]] = [
            stats.quantile(stats.pooled([h]), 0.99)
            for h in (r["histogram"], r["traced_histogram"])]
        t = r["trace"]
        if "error" in t:
            c["errors"].append(f"boot {r['boot']}: {t['error']}")
            continue
        if t.get("softirqs"):
            c["softirqs"].append(t["softirqs"])
        if t.get("lost_events"):
            c["lost"].append(f"boot {r['boot']}: " + ", ".join(
                f"{cpu} lost {n}" for cpu, n in t["lost_events"].items()))
        if not t.get("agreement", {"ok": True})["ok"]:
            c["mismatched"].append(f"boot {r['boot']}: "
                                   f"{t['agreement']['why']}")
            continue
        c["agreed"] += "agreement" in t
        if "agreement" in t and "pairs" in t["agreement"]:
            c["outside"].append((t["agreement"]["pairs"] -
                                 t["agreement"]["inside"],
                                 t["agreement"]["pairs"]))
        c["wakeups"] += t["wakeups"]
        c["over_us"] = t["over_us"]
        c["over"] += t["over"]
        for kind, n in t.get("causes", {}).items():
            c["causes"][kind] = c["causes"].get(kind, 0) + n
        c["worst"] += [dict(x, boot=r["boot"]) for x in t["worst"]]
    out = {}
    for key, c in cells.items():
        p99 = [stats.quantile(stats.pooled(c[k]), 0.99)
               for k in ("untraced", "traced")]
        med = [stats.quantile(stats.pooled(c[k]), 0.5)
               for k in ("untraced", "traced")]
        out[key] = {
            "worst": sorted(c["worst"],
                               key=lambda x: -x["latency_us"])[:WORST],
            "wakeups": c["wakeups"], "over": c["over"],
            "over_us": c.get("over_us", 0),
            "causes": dict(sorted(c["causes"].items(),
                                  key=lambda kv: -kv[1])),
            "errors": c["errors"], "mismatched": c["mismatched"],
            "lost": c["lost"], "timerlat": c["timerlat"],
            "agreed": c["agreed"], "outside": c["outside"],
            "boot_p99": c["boot_p99"],
            "softirqs": mean_accounting(c["softirqs"]),
            "overhead": {"boots": len(c["untraced"]),
                         "median_us": med, "p99_us": p99,
                         "p99_ratio": p99[1] / p99[0] if p99[0] else None}}
    return out


# trace.net_rx_ends()'s reasons, in report.md's order and words
NET_RX_ENDS = {"drained": "drained", "packet_budget": "packet budget",
               "wakeup": "a task woke", "time": "time limit"}


def mean_accounting(boots: list) -> dict:
    """trace.softirq_accounting() over a cell's traced boots: the mean
    share of a CPU per vector, inline and in ksoftirqd; and per traced
    second, ksoftirqd's wake-ups, the early stops among them, and each
    vector's hand-overs at those stops."""
    if not boots:
        return {}
    share = {}
    for b in boots:
        for vec, where in b["cpu_percent"].items():
            for k, x in where.items():
                share.setdefault(vec, {}).setdefault(k, []).append(x)

    def per_s(count) -> float:
        return sum(count(b) / b["seconds"] for b in boots
                   if b["seconds"]) / len(boots)

    vecs = sorted({v for b in boots for v in b.get("handed_over", {})})
    cpus = sorted({c for b in boots for c in b.get("cyclictest_cpu_percent",
                                                   {})})
    return {"boots": len(boots),
            "cpu_percent": {v: {k: sum(xs) / len(boots)
                                for k, xs in w.items()}
                            for v, w in share.items()},
            "ksoftirqd_wakeups_per_s": per_s(
                lambda b: b["ksoftirqd_wakeups"]),
            "stopped_early_per_s": per_s(
                lambda b: b.get("stopped_early", 0)),
            "handed_over_per_s": {v: per_s(
                lambda b, v=v: b.get("handed_over", {}).get(v, 0))
                for v in vecs},
            "cyclictest_cpu_percent": {c: sum(
                b.get("cyclictest_cpu_percent", {}).get(c, 0)
                for b in boots) / len(boots) for c in cpus},
            "handler_us": merged_lengths(boots),
            "net_rx_ends": {k: sum(b.get("net_rx_ends", {}).get(k, 0)
                                   for b in boots)
                            for k in ("runs", *NET_RX_ENDS)},
            "napi_polls": merged_napi_polls(boots)}


def merged_napi_polls(boots: list) -> dict:
    """trace.napi_polls() added up over a cell's traced boots."""
    cpus = Counter()
    for b in boots:
        cpus.update(b.get("napi_polls", {}).get("cpus", {}))
    return {"polls": sum(cpus.values()),
            "in_threads": sum(b.get("napi_polls", {}).get("in_threads", 0)
                              for b in boots),
            "cpus": dict(sorted(cpus.items(), key=lambda x: int(x[0])))}


def merged_lengths(boots: list) -> dict:
    """Each vector's handler lengths over a cell's traced boots (one,
    as a rule): runs and runs over 1 ms added up, the median boot's p50
    and p99, the longest run."""
    per = {}
    for b in boots:
        for vec, h in b.get("handler_us", {}).items():
            per.setdefault(vec, []).append(h)
    return {vec: {"runs": sum(h["runs"] for h in hs),
                  "p50": statistics.median(h["p50"] for h in hs),
                  "p99": statistics.median(h["p99"] for h in hs),
                  "max": max(h["max"] for h in hs),
                  "over_1ms": sum(h["over_1ms"] for h in hs)}
            for vec, hs in sorted(per.items())}


def handler_table(t: dict, variants: list, scenarios: list,
                  module_args: dict) -> list:
    """report.md's table of how long each vector's handler ran in the
    traced boots, beside the test module's own spin where it is loaded."""
    out = []
    for scen in scenarios:
        rows = [(v, vec, h) for v in variants
                for vec, h in t.get(f"{scen}/{v}", {}).get(
                    "softirqs", {}).get("handler_us", {}).items()
                if h["max"] >= HANDLER_MIN_US]
        if not rows:
            continue
        spin = dict(w.split("=", 1) for w in
                    module_args.get(scen, "").split()).get("spin_us")
        out += [f"{scen}" + (f" (the module spins {spin} us a run)"
                             if spin else " (no test module: every "
                             "handler is the kernel's own)") + ":", "",
                "| variant | vector | runs | p50 us | p99 us | max us | "
                "over 1 ms |", "|---|---|---|---|---|---|---|"]
        out += [f"| {v} | {vec} | {h['runs']} | {h['p50']:.0f} | "
                f"{h['p99']:.0f} | {h['max']:.0f} | {h['over_1ms']} |"
                for v, vec, h in rows]
        out.append("")
    return out


# vectors whose longest run in a cell is shorter are left out of the
# handler table
HANDLER_MIN_US = 100


# vectors under this share of a CPU in every cell of a scenario are left
# out of its accounting table
ACCOUNT_MIN_PERCENT = 0.5


def _traced_cells(t: dict, variants: list, scen: str, part: str,
                  count: str) -> list:
    """[(variant, its cell's mean_accounting())] of one scenario, for the
    variants whose traced boots counted any of `part`'s `count`."""
    return [(v, t[f"{scen}/{v}"]["softirqs"]) for v in variants
            if t.get(f"{scen}/{v}", {}).get("softirqs", {}).get(
                part, {}).get(count)]


def net_rx_ends_table(t: dict, variants: list, scenarios: list) -> list:
    """report.md's tables of how NET_RX runs ended, per scenario where
    a traced boot ran any: counts over the cell's traced boots."""
    out = []
    for scen in scenarios:
        rows = _traced_cells(t, variants, scen, "net_rx_ends", "runs")
        if not rows:
            continue
        out += [f"{scen}:", "", "| variant | boots | NET_RX runs | " +
                " | ".join(NET_RX_ENDS.values()) + " |",
                "|---|---|---|" + "---|" * len(NET_RX_ENDS)]
        for var, a in rows:
            ends = a["net_rx_ends"]
            out.append(f"| {var} | {a['boots']} | {ends['runs']} | " +
                       " | ".join(str(ends.get(k, 0)) for k in NET_RX_ENDS)
                       + " |")
        out.append("")
    return out


def napi_polls_table(t: dict, variants: list, scenarios: list) -> list:
    """report.md's tables of where NAPI polled, per scenario where a
    traced boot polled at all and some variant polled in threads or on
    more than one CPU: counts over the cell's traced boots."""
    out = []
    for scen in scenarios:
        rows = _traced_cells(t, variants, scen, "napi_polls", "polls")
        if not any(a["napi_polls"]["in_threads"] or
                   len(a["napi_polls"]["cpus"]) > 1 for _, a in rows):
            continue
        cpus = sorted({c for _, a in rows for c in a["napi_polls"]["cpus"]},
                      key=int)
        out += [f"{scen}:", "", "| variant | boots | NAPI polls | in "
                "napi/ threads % | " + " | ".join(f"on CPU{c} %"
                                                  for c in cpus) + " |",
                "|---|---|---|---|" + "---|" * len(cpus)]
        for var, a in rows:
            n = a["napi_polls"]
            out.append(f"| {var} | {a['boots']} | {n['polls']} | "
                       f"{100 * n['in_threads'] / n['polls']:.0f} | " +
                       " | ".join(f"{100 * n['cpus'].get(c, 0) / n['polls']:.0f}"
                                  for c in cpus) + " |")
        out.append("")
    return out


def accounting_table(t: dict, variants: list, scenarios: list) -> list:
    """report.md's tables of where softirq work ran, per scenario."""
    out = []
    for scen in scenarios:
        rows = [(v, t[f"{scen}/{v}"]["softirqs"]) for v in variants
                if t.get(f"{scen}/{v}", {}).get("softirqs")]
        vecs = sorted({vec for _, a in rows
                       for vec, w in a["cpu_percent"].items()
                       if sum(w.values()) >= ACCOUNT_MIN_PERCENT})
        if not rows:
            continue
        out += [f"{scen}:", "",
                "| variant | boots | " + "".join(
                    f"{v} inline % | {v} in ksoftirqd % | " for v in vecs) +
                "ksoftirqd wake-ups/s | stopped early/s | handed over/s"
                " | cyclictest on CPU0 % |",
                "|---|---|" + "---|---|" * len(vecs) + "---|---|---|---|"]
        for var, a in rows:
            cells = []
            for vec in vecs:
                w = a["cpu_percent"].get(vec, {})
                cells += [f"{w.get('inline', 0):.1f}",
                          f"{w.get('ksoftirqd', 0):.1f}"]
            handed = ", ".join(f"{v} {x:.0f}" for v, x in
                               a.get("handed_over_per_s", {}).items()
                               if x >= 0.5) or "-"
            where = a.get("cyclictest_cpu_percent", {})
            on_cpu0 = f"{where.get('0', 0):.0f}" if where else "-"
            out.append(f"| {var} | {a['boots']} | " +
                       "".join(f"{c} | " for c in cells) +
                       f"{a['ksoftirqd_wakeups_per_s']:.0f}"
                       f" | {a.get('stopped_early_per_s', 0):.0f}"
                       f" | {handed} | {on_cpu0} |")
        out.append("")
    return out


def cause_lines(t: dict, variants: list, scen: str) -> list:
    """One line per cell: the cause of its worst traced wake-up."""
    out = []
    for var in variants:
        c = t.get(f"{scen}/{var}")
        if not c:
            continue
        if c["worst"]:
            x = c["worst"][0]
            why = f"{x['latency_us']} us, {x['cause']}"
        elif c["mismatched"]:
            why = f"trace does not match cyclictest ({c['mismatched'][0]})"
        else:
            why = c["errors"][0] if c["errors"] else "no wake-up traced"
        out += _wrap(f"worst traced, {var}: {why}", "    ")
        if c["lost"]:
            out += _wrap(f"trace lost events, {var}: {c['lost'][0]}",
                         "    ")
        for r in c["timerlat"]:
            out += _wrap(f"rtla timerlat, {var} (pinned threads): "
                         f"{rtla_text(r)}", "    ")
    return out


def rtla_text(r: dict) -> str:
    if not r["hit"]:
        return "no latency over the threshold" + (
            f" ({r['error']})" if r.get("error") else "")
    return (f"CPU{r['cpu']} {r['latency_us']:.0f} us, "
            f"{r['cause']} {100 * r['share']:.0f}%")


def rtla_agreement(t: dict) -> tuple:
    """(cells where rtla's cause names the lab's worst cause, cells with
    both): the second opinion, counted."""
    both = agree = 0
    for c in t.values():
        hits = [r for r in c.get("timerlat", []) if r["hit"]]
        if not hits or not c["worst"]:
            continue
        both += 1
        agree += timerlat.agrees(hits[0], c["worst"][0]["kind"])
    return agree, both


CHANGED = 2.0       # traced p99 this many times off: another run


def traced_from(c: dict, boot: int) -> str:
    """Which run an explanation comes from, and whether tracing changed
    it: the boot's traced p99 beside its measured one."""
    measured, traced = c.get("boot_p99", {}).get(boot, (None, None))
    text = f"boot {boot}, trace phase"
    if not measured or not traced:
        return text
    text += (f", p99 {fmt_us(traced)} traced against {fmt_us(measured)} "
             f"measured")
    if not 1 / CHANGED <= traced / measured <= CHANGED:
        text += ": from a run the trace changed"
    return text


def agreement_line(t: dict) -> list:
    """How many traced runs passed the check against cyclictest."""
    agreed = sum(c["agreed"] for c in t.values())
    failed = sum(len(c["mismatched"]) for c in t.values())
    if not agreed + failed:
        return []
    outside = [o for c in t.values() for o in c.get("outside", [])]
    some = [o for o in outside if o[0]]
    counts = (f"; {len(outside) - len(some)} of them with every sample "
              f"inside its window, {len(some)} with "
              f"{min(o[0] for o in some)}-{max(o[0] for o in some)} "
              f"outside ({sum(o[0] for o in some)} of "
              f"{sum(o[1] for o in some)} samples)" if some else
              "; every sample of each inside its window" if outside
              else "")
    return _wrap(
        f"Traces agree with cyclictest in {agreed} of "
        f"{agreed + failed} traced runs{counts} (windows number the samples "
        f"within 2%; {trace.AGREE_SHARE:.0%} of samples inside their "
        f"window, from the switch-in to the next sleep, +-"
        f"{trace.AGREE_US} us for each vCPU beside the thread's, one "
        f"round-robin slice of the emulator; cyclictest's max and p99 "
        f"inside the windows' within 5% or that margin); a run that does "
        f"not agree is named below and its causes are not used.")


def text(t: dict, variants: list, scenarios: list) -> list:
    """The full cause table and the tracing overhead (for report.md)."""
    if not t:
        return []
    out = [""] + agreement_line(t) + [""]
    out += _wrap("Cause of the worst-case latency (traced run of "
                 "cyclictest under the same load; each sample from the "
                 "expiry its timer was set for to the thread's next "
                 "sleep; every sample over the threshold counted by "
                 "cause, the worst three per cell in full):")
    for scen in scenarios:
        rows = [(v, t[f"{scen}/{v}"]) for v in variants
                if f"{scen}/{v}" in t]
        if not rows:
            continue
        out.append(f"{scen}:")
        for var, c in rows:
            for m in c["mismatched"]:
                out += _wrap(f"{var}: trace does not match cyclictest, "
                             f"causes not used: {m}", "  ")
            if not c["worst"] and not c["mismatched"]:
                why = c["errors"][0] if c["errors"] else \
                    "no wake-up of cyclictest in the trace"
                out += _wrap(f"{var}: {why}", "  ")
            if c["wakeups"]:
                out += _wrap(f"  {var}: {c['over']} of {c['wakeups']} "
                             f"wake-ups over {c['over_us']} us" + (
                                 ": " + ", ".join(
                                     f"{n} {kind}" for kind, n in
                                     c["causes"].items())
                                 if c["causes"] else "") + "; worst:",
                             "    ")
            for x in c["worst"]:
                out += _wrap(f"  {x['latency_us']} us: "
                             f"{x['cause']}; {trace.placement(x)}; "
                             f"{traced_from(c, x['boot'])}", "    ")
            for r in c["timerlat"]:
                out += _wrap(f"  rtla timerlat --aa-only (threads pinned, one "
                             f"per CPU): {rtla_text(r)}", "    ")
    agree, both = rtla_agreement(t)
    if both:
        out += [""] + _wrap(
            f"rtla and the lab name the same cause in {agree} of {both} "
            f"cells.  They need not: rtla's threads are pinned, one per "
            f"CPU, and its CPU0 thread waits for a handler on CPU0 "
            f"whatever the kernel does with free tasks; cyclictest's "
            f"threads may move.  A pinned task is the case placement "
            f"cannot help.")
    out += ["", "Tracing overhead (same boots, traced run after the "
            "measured one):", f"  {'cell':<28}{'p99 untraced':>13}"
            f"{'traced':>8}{'ratio':>7}"]
    for scen in scenarios:
        for var in variants:
            c = t.get(f"{scen}/{var}")
            if not c:
                continue
            o = c["overhead"]
            ratio = f"{o['p99_ratio']:.2f}" if o["p99_ratio"] else "-"
            out.append(f"  {scen + '/' + var:<28}"
                       f"{fmt_us(o['p99_us'][0]):>13}"
                       f"{fmt_us(o['p99_us'][1]):>8}{ratio:>7}")
    return [line[:WIDTH] for line in out]


def files(t: dict, variants: list, scenarios: list, out: Path) -> list:
    """timeline-<scenario>.png per scenario (worst case of each variant),
    and data/trace-<scenario>-<variant>.json (the worst window, for the
    Perfetto UI); returns the images.  The whole trace.dat (0.4-2 MB,
    already compressed by trace-cmd) stays in the run folder: a report
    folder stays small, and data/'s run file names its path.  Each
    scenario's traces are read again, one scenario per host core."""
    todo = []
    for scen in scenarios:
        worst = [(v, t[f"{scen}/{v}"]["worst"][0]) for v in variants
                 if t.get(f"{scen}/{v}", {}).get("worst")]
        if worst:
            todo.append((scen, worst))
    return map_on_cores(_timeline, *zip(*todo), repeat(out)) \
        if todo else []


def _timeline(scen: str, worst: list, out: Path) -> str:
    plt = figures.pyplot()
    fig, axes = plt.subplots(len(worst), 1, squeeze=False,
                             figsize=(9, 1.3 + 1.2 * len(worst)))
    for ax, (var, x) in zip(axes[:, 0], worst):
        dat = Path(x["trace"])
        events = trace.parse(trace.report_text(dat))
        title = (f"{var}: {x['latency_us']} us, {x['cause']}")[:110]
        traceview.draw(ax, events, x, title)
        stem = f"trace-{scen}-{var}"
        traceview.perfetto(events, x, out / "data" / f"{stem}.json")
    axes[-1, 0].set_xlabel("ms from the expected wake-up")
    fig.legend(handles=traceview.legend_handles(), loc="lower center",
               ncol=6, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    name = f"timeline-{scen}.png"
    figures.save(fig, out / name)
    return name
