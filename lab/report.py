"""Turn run folders into a report: report.txt, report.md, plots, data/.

Reads only what the runs wrote (via lab/results.py), so it can be run
again, anywhere the results folder was copied, without booting anything.
report.txt is plain text of at most 72 columns, for a reply on the list.
"""
import time
from collections import defaultdict
from pathlib import Path

from . import report_traces, results, stats, store
from .log import LabError, warn
from .textfmt import WIDTH, fmt_us, wrap as _wrap


def load(root: Path, variants=None, scenarios=None) -> list:
    runs = []
    for run_json in sorted(root.glob("*/*/boot-*/run.json")):
        s = results.summarize(run_json.parent)
        if variants and s["variant"] not in variants:
            continue
        if scenarios and s["scenario"] not in scenarios:
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


def _metrics(rs: list) -> dict:
    """Each load generator metric, averaged over the boots that had it."""
    out = {}
    for m in sorted({m for r in rs for m in r["metrics"]}):
        have = [r["metrics"][m] for r in rs if m in r["metrics"]]
        out[m] = {"value": sum(x["value"] for x in have) / len(have),
                  "unit": have[0]["unit"]}
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


def analyse(runs: list) -> dict:
    """Cells, comparisons with baseline, probe and cost figures."""
    ok = [r for r in runs if r["status"] == "ok"]
    by_cell = defaultdict(list)
    for r in ok:
        by_cell[(r["scenario"], r["variant"])].append(r)
    variants = sorted({r["variant"] for r in runs},
                      key=lambda v: (v != "baseline", v))
    scenarios = sorted({r["scenario"] for r in runs},
                       key=lambda s: (s != "idle", s))
    idle = by_cell.get(("idle", "baseline"))
    noise = stats.cell([r["histogram"] for r in idle])["p99"] if idle \
        else 0.0
    if not idle:
        warn("no idle baseline runs: the noise floor is unknown (0)")
    out = {"variants": variants, "scenarios": scenarios,
           "noise_floor_us": noise, "cells": {}, "failed": [
               {k: r[k] for k in ("variant", "scenario", "boot", "reason")}
               for r in runs if r["status"] != "ok"]}
    for (scen, var), rs in by_cell.items():
        hists = [r["histogram"] for r in rs]
        c = {"latency": stats.cell(hists),
             "free_to_move": all(r["affinity"]["free_to_move"] for r in rs),
             "ksoftirqd_cpu_percent": sum(r["ksoftirqd_cpu_percent"]
                                          for r in rs) / len(rs),
             "softirqs": {v: sum(r["softirqs"][v] for r in rs) / len(rs)
                          for v in results.VECTORS}}
        c["metrics"] = _metrics(rs)
        probe = probe_summary(rs)
        if probe:
            c["probe"] = probe
        base = by_cell.get((scen, "baseline"))
        if var != "baseline" and base:
            c["vs_baseline"] = stats.compare(
                hists, [r["histogram"] for r in base], noise)
        out["cells"][f"{scen}/{var}"] = c
    return out


def _setup_lines(runs: list, a: dict) -> list:
    r0 = runs[0]
    q = r0["qemu"]
    boots = max(r["boot"] for r in runs)
    accels = sorted({r["accel"] for r in runs})
    return [
        f"Kernel: Linux {r0['kernel']['kernel_version']} (Debian "
        f"linux-source-6.1), variants: {', '.join(a['variants'])}.",
        f"Guest: {q['qemu_version']}, "
        f"{r0.get('cpus', 2)} vCPUs, accelerator {'/'.join(accels)} "
        f"({' '.join(q['accel']['args'])}"
        + (f", guest {q['accel']['append']}" if q['accel'].get('append')
           else "") + ")"
        + (f", setting {q['accel']['setting']}" if q['accel'].get('setting')
           else "") + ".",
        f"Host CPU: {q['host_cpu']}.",
        f"Boots per cell: up to {boots}; cyclictest -p 99, threads not "
        f"pinned (affinity widened after start).",
        f"Noise floor (idle scenario, baseline, p99): "
        f"{fmt_us(a['noise_floor_us'])} us.",
    ]


def _verdict(c: dict) -> str:
    vs = c.get("vs_baseline")
    if not vs:
        return ""
    word = {"win": "WIN", "loss": "LOSS",
            "too few boots": "1 boot"}.get(vs["verdict"], "same")
    return f"x{vs['ratio']:.2f} {word}"


def text_report(runs: list, a: dict, descriptions: dict) -> str:
    out = ["softirq-rt lab: " + " vs ".join(a["variants"]), ""]
    for line in _setup_lines(runs, a):
        out += _wrap(line)
    out += [""] + _wrap(
        "A variant wins or loses against baseline on p99 only with at "
        "least 2 boots per cell, when a one-sided Fisher exact test on "
        "the share of samples above the midpoint of the two p99s "
        "gives p < 0.01, the 95% bootstrap intervals over boots do not "
        "overlap, and the difference exceeds the noise floor; otherwise "
        "'same'. Probe runs whose triggers mostly missed are left out. "
        "Latencies in microseconds.")
    for scen in a["scenarios"]:
        out += ["", f"{scen}: {descriptions.get(scen, '')}"[:WIDTH]]
        out.append(f"  {'variant':<10}{'median':>7}{'p99':>7} "
                   f"{'[95% CI]':<13}{'max':>7}{'>1ms':>7}  vs base")
        for var in a["variants"]:
            c = a["cells"].get(f"{scen}/{var}")
            if not c:
                out.append(f"  {var:<10}  no finished run")
                continue
            L = c["latency"]
            ci = f"[{fmt_us(L['p99_ci'][0])}-{fmt_us(L['p99_ci'][1])}]"
            out.append(f"  {var:<10}{fmt_us(L['median']):>7}"
                       f"{fmt_us(L['p99']):>7} {ci:<13}"
                       f"{fmt_us(L['max']):>7}"
                       f"{L['over_1ms'] * 100:>6.1f}%  {_verdict(c)}")
        probe_rows = [(v, a["cells"][f"{scen}/{v}"]["probe"])
                      for v in a["variants"]
                      if "probe" in a["cells"].get(f"{scen}/{v}", {})]
        if probe_rows:
            out.append("  probe, RT task woken inside the handler "
                       "(wake-ups issued in time):")
            for var, p in probe_rows:
                out.append(f"  {var:<10}median {fmt_us(p['median_us'])}, "
                           f"p99 {fmt_us(p['p99_us'])}, moved "
                           f"{p['moved'] * 100:.0f}% "
                           f"({p['valid']}/{p['samples']})")
        cost = [(v, a["cells"][f"{scen}/{v}"]) for v in a["variants"]
                if f"{scen}/{v}" in a["cells"]]
        if any(c["metrics"] for _, c in cost):
            out.append("  cost:")
            for var, c in cost:
                ms = ", ".join(f"{m} {d['value']:.1f}"
                               for m, d in c["metrics"].items())
                out += _wrap(f"{var}: {ms}, ksoftirqd "
                             f"{c['ksoftirqd_cpu_percent']:.1f}% CPU",
                             "  ")
    out += ["", "Findings (significant and above the noise floor only):"]
    found = False
    for scen in a["scenarios"]:
        for var in a["variants"]:
            vs = a["cells"].get(f"{scen}/{var}", {}).get("vs_baseline")
            if vs and vs["verdict"] in ("win", "loss"):
                found = True
                b = a["cells"][f"{scen}/baseline"]["latency"]["p99"]
                v = a["cells"][f"{scen}/{var}"]["latency"]["p99"]
                word = "wins" if vs["verdict"] == "win" else "loses"
                p = vs["p_less" if vs["verdict"] == "win" else "p_greater"]
                out += _wrap(f"- {var} {word} in {scen}: p99 "
                             f"{fmt_us(b)} -> {fmt_us(v)} us (p={p:.1g}; "
                             f"noise floor {fmt_us(vs['noise_floor_us'])} "
                             f"us).", "")
    if not found:
        out.append("- none.")
    out += report_traces.text(a.get("traces", {}), a["variants"],
                              a["scenarios"])
    if a["failed"]:
        out += ["", "Failed runs (kept, not counted):"]
        for f in a["failed"]:
            out += _wrap(f"- {f['variant']} {f['scenario']} boot "
                         f"{f['boot']}: {f['reason'].splitlines()[0]}", "")
    return "\n".join(line[:WIDTH] for line in out) + "\n"


def plots(runs: list, a: dict, out: Path) -> list:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    made = []
    for scen in a["scenarios"]:
        ok = {var: [r["histogram"] for r in runs if r["status"] == "ok"
                    and r["scenario"] == scen and r["variant"] == var]
              for var in a["variants"]}
        if not any(ok.values()):
            continue            # every run failed: nothing to draw
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for var, hists in ok.items():
            if not hists:
                continue
            h = stats.pooled(hists)
            keys = np.array(sorted(h), dtype=float)
            cdf = np.cumsum([h[k] for k in sorted(h)]) / sum(h.values())
            ax.step(np.maximum(keys, 1), cdf, where="post", label=var)
        ax.set_xscale("log")
        ax.set_xlabel("latency (us, log scale)")
        ax.set_ylabel("fraction of samples")
        ax.set_title(f"{scen}: cyclictest latency CDF")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        name = f"cdf-{scen}.png"
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        made.append(name)

    if not a["cells"]:
        return made
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    width = 0.8 / max(1, len(a["variants"]))
    for i, var in enumerate(a["variants"]):
        for ax, metric in zip(axes, ("p99", "max")):
            xs, ys, lo, hi = [], [], [], []
            for j, scen in enumerate(a["scenarios"]):
                c = a["cells"].get(f"{scen}/{var}")
                if not c:
                    continue
                L = c["latency"]
                xs.append(j + i * width)
                ys.append(L[metric])
                lo.append(L[metric] - L[metric + "_ci"][0])
                hi.append(L[metric + "_ci"][1] - L[metric])
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=3,
                        label=var)
    for ax, metric in zip(axes, ("p99", "max")):
        ax.set_xticks([j + 0.4 - width / 2
                       for j in range(len(a["scenarios"]))])
        ax.set_xticklabels(a["scenarios"], rotation=45, ha="right")
        ax.set_yscale("log")
        ax.set_ylabel(f"{metric} latency (us)")
        ax.set_title(f"{metric} with 95% interval over boots")
        ax.grid(True, axis="y", which="both", alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(out / "tails.png", dpi=110)
    plt.close(fig)
    made.append("tails.png")
    return made


def markdown(text: str, images: list, command: str) -> str:
    timelines = [i for i in images if i.startswith("timeline-")]
    md = ["# softirq-rt lab report", "",
          f"Made with `{command}`; the raw results are in `data/`.", "",
          "```", text.rstrip(), "```", ""]
    md += ["## Tail latency", "", "![p99 and max](tails.png)", ""]
    md += ["## Latency CDF per scenario", ""]
    md += [f"![{i}]({i})" for i in images if i.startswith("cdf-")]
    if timelines:
        md += ["", "## Worst cases, from traces", "",
               "Each variant's worst captured sample per scenario: one row "
               "per guest CPU, tasks below, softirqs and hard irqs above, "
               "the latency window shaded, time in ms from the expected "
               "wake-up. The traces are in `data/`: "
               "`trace-<scenario>-<variant>.dat` opens in KernelShark, "
               "the `.json` beside it in the Perfetto UI "
               "(ui.perfetto.dev).", ""]
        md += [f"![{i}]({i})" for i in timelines]
    return "\n".join(md) + "\n"


def write(root: Path, out: Path, descriptions: dict, command: str,
          variants=None, scenarios=None) -> Path:
    runs = load(root, variants, scenarios)
    a = analyse(runs)
    a["traces"] = report_traces.analyse(runs)
    out.mkdir(parents=True, exist_ok=True)
    (out / "data").mkdir(exist_ok=True)
    for r in runs:
        name = f"{r['variant']}-{r['scenario']}-boot{r['boot']}.json"
        store.write_json(out / "data" / name, r)
    store.write_json(out / "data" / "analysis.json", a)
    text = text_report(runs, a, descriptions)
    store.write_text(out / "report.txt", text)
    images = plots(runs, a, out) + report_traces.files(
        a["traces"], a["variants"], a["scenarios"], out)
    store.write_text(out / "report.md", markdown(text, images, command))
    return out


def default_folder(name: str) -> Path:
    from . import paths
    return paths.REPO / "reports" / f"{time.strftime('%Y-%m-%d')}-{name}"

